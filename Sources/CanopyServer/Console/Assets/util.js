// util.js -- DOM building (text only: user data is never parsed as HTML), JSON trees, key order, CSV, push ids.

// el("li", {class: "card", onclick: f}, child, "text", …): children are nodes or strings (set as text nodes).
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name in node && typeof value !== "string") node[name] = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

export function $(id) { return document.getElementById(id); }

export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

export function show(node, visible) { node.hidden = !visible; }

let liveTimer = 0;
// Announces `text` to screen readers (and shows it nowhere else).
export function announce(text) {
  const live = $("live");
  live.textContent = "";
  clearTimeout(liveTimer);
  liveTimer = setTimeout(() => { live.textContent = text; }, 30);
}

// Firebase key order: keys that are 32-bit integers first, numerically, then the rest as strings.
const intKey = /^-?(0|[1-9][0-9]{0,9})$/;
export function compareKeys(a, b) {
  const ai = intKey.test(a) && Math.abs(Number(a)) <= 2147483647;
  const bi = intKey.test(b) && Math.abs(Number(b)) <= 2147483647;
  if (ai && bi) return Number(a) - Number(b) || a.length - b.length;
  if (ai) return -1;
  if (bi) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

// Sort items (key, value) by numeric `order`, then key.
export function byOrderThenKey(a, b) {
  const oa = orderOf(a.value), ob = orderOf(b.value);
  if (oa !== ob) return oa - ob;
  return compareKeys(a.key, b.key);
}

export function orderOf(item) {
  const o = item && typeof item === "object" ? item.order : undefined;
  return typeof o === "number" && isFinite(o) ? o : Number.POSITIVE_INFINITY;
}

// The children of a JSON value stored by Firebase: an array's indexes or an object's keys.
export function entries(value) {
  if (Array.isArray(value)) return value.map((v, i) => [String(i), v]).filter(([, v]) => v !== null && v !== undefined);
  if (value && typeof value === "object") return Object.entries(value);
  return [];
}

// A visibility list (`tierIds` etc.): an array, or an object whose keys or values are ids.
export function idList(value) {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.filter(v => v !== null).map(String);
  if (typeof value === "object") return Object.values(value).map(String);
  return [String(value)];
}

export function isObject(value) { return value !== null && typeof value === "object"; }

// Applies a server-sent event (`put`, or `patch` when merge) at `path` ("/a/b") to `root`; returns the new root.
export function applyAt(root, path, data, merge) {
  const parts = path.split("/").filter(Boolean);
  if (merge) {
    let next = root;
    for (const [key, value] of Object.entries(data || {})) next = setAt(next, parts.concat(key.split("/").filter(Boolean)), value);
    return next;
  }
  return setAt(root, parts, data);
}

function setAt(node, parts, value) {
  if (parts.length === 0) return normalize(value);
  const [head, ...rest] = parts;
  const base = isObject(node) ? (Array.isArray(node) ? Object.assign({}, node) : Object.assign({}, node)) : {};
  const child = setAt(base[head], rest, value);
  if (child === null || child === undefined) delete base[head];
  else base[head] = child;
  return Object.keys(base).length ? base : null;
}

function normalize(value) {
  if (value === undefined) return null;
  if (Array.isArray(value)) {
    const out = {};
    value.forEach((v, i) => { const n = normalize(v); if (n !== null) out[String(i)] = n; });
    return Object.keys(out).length ? out : null;
  }
  if (isObject(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) { const n = normalize(v); if (n !== null) out[k] = n; }
    return Object.keys(out).length ? out : null;
  }
  return value;
}

export function valueAt(root, path) {
  let node = root;
  for (const part of path.split("/").filter(Boolean)) {
    if (!isObject(node)) return null;
    node = node[part];
    if (node === undefined) return null;
  }
  return node === undefined ? null : node;
}

// A canonical text of a JSON value (sorted keys, arrays as index objects), for equality.
export function canonical(value) {
  const v = normalize(value);
  if (!isObject(v)) return JSON.stringify(v);
  return "{" + Object.keys(v).sort().map(k => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
}

export function pretty(value) { return JSON.stringify(value, null, 2); }

export function countNodes(value) {
  if (!isObject(value)) return 1;
  let n = 0;
  for (const v of Object.values(value)) n += countNodes(v);
  return n + 1;
}

export function formatTime(ms) {
  if (typeof ms !== "number") return "never";
  const d = new Date(ms);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

// RFC 4180 CSV: quoted fields, "" for a quote, CRLF or LF rows; returns rows of strings.
export function parseCSV(text) {
  const rows = [];
  let row = [], field = "", quoted = false, i = 0;
  if (text.charCodeAt(0) === 0xfeff) i = 1;
  for (; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') { if (text[i + 1] === '"') { field += '"'; i++; } else quoted = false; }
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { row.push(field); field = ""; }
    else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field); rows.push(row); row = []; field = "";
    } else field += c;
  }
  if (field !== "" || row.length) { row.push(field); rows.push(row); }
  return rows.filter(r => r.some(f => f.trim() !== ""));
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// Only http(s) links are made clickable.
export function safeURL(text) {
  try {
    const url = new URL(String(text));
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch { return null; }
}

// A modal confirmation (the <dialog id="dialog">): resolves true when confirmed. `body` is nodes; Escape cancels.
export function confirmDialog(title, body, { ok = "Confirm", danger = false, okDisabled = false } = {}) {
  const dialog = $("dialog");
  $("dialog-title").textContent = title;
  append(clear($("dialog-body")), [body]);
  const okButton = $("dialog-ok");
  okButton.textContent = ok;
  okButton.className = danger ? "danger" : "primary";
  okButton.disabled = okDisabled;
  return new Promise(resolve => {
    const finish = answer => {
      okButton.removeEventListener("click", onOK);
      $("dialog-cancel").removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const onOK = () => finish(true);
    const onCancel = event => { if (event) event.preventDefault(); finish(false); };
    okButton.addEventListener("click", onOK);
    $("dialog-cancel").addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    (okDisabled ? $("dialog-cancel") : $("dialog-cancel")).focus();
  });
}
