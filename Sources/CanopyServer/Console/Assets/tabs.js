// tabs.js -- the Publish (history, rollback), Preview (phone frame), Attendees (directory), Data and Rules tabs.

import { API } from "./api.js";
import { rollbackAction } from "./content.js";
import {
  $, el, clear, announce, compareKeys, confirmDialog, countNodes, entries, formatTime, isObject, orderOf, safeURL, valueAt,
} from "./util.js";

// MARK: - Publish tab

export async function loadHistory(ctx) {
  const list = $("history");
  let rows;
  try {
    const answer = await ctx.api.get("/.canopy/history", { accept: [404] });
    if (answer.status === 200 && answer.data && Array.isArray(answer.data.entries)) rows = answer.data.entries;
    else {
      // Without the history endpoint: the history records themselves (ids sort in publish order).
      const raw = await ctx.api.get(API.dataPath("/private/admin/publishHistory"));
      rows = entries(raw.data).sort((a, b) => compareKeys(b[0], a[0])).map(([id, record]) => ({
        id, publishedAt: record && record.publishedAt, publisher: record && record.publisher,
        itemCount: record && isObject(record.content) ? Object.keys(record.content).length : 0,
        rollbackOf: record && record.rollbackOf }));
    }
  } catch (error) {
    clear(list).appendChild(el("li", { class: "error", text: error.message }));
    return;
  }
  clear(list);
  if (!rows.length) list.appendChild(el("li", { class: "hint", text: "Nothing has been published yet." }));
  for (const entry of rows) {
    const when = entry.publishedAt ? formatTime(entry.publishedAt) : entry.id;
    list.appendChild(el("li", { "data-history": entry.id },
      el("strong", { text: when }),
      " · " + (entry.itemCount !== undefined ? entry.itemCount + " items" : "") + (entry.publisher ? " · by " + entry.publisher : "")
        + (entry.rollbackOf ? " · rollback" : ""),
      entry.current ? el("span", { class: "badge live", text: "Current" }) : null, " ",
      el("button", { type: "button", class: "small", "aria-label": "Roll back to the publish of " + when, text: "Roll back to this…",
        onclick: () => rollbackAction(ctx, entry) })));
  }
}

export function renderPublishSummary(ctx, rows) {
  const pending = rows.filter(row => row.state !== "same").length;
  $("publish-summary").textContent = "Last published: " + ctx.lastPublishedText() + ". "
    + (pending ? pending + " items differ from what is live." : "Everything is published.");
}

// MARK: - Preview tab

export function fillAttendeePicker(ctx) {
  const select = $("preview-attendee");
  const chosen = select.value;
  clear(select);
  const people = (ctx.directory && ctx.directory.attendees) || [];
  if (!people.length) select.appendChild(el("option", { value: "", text: "(upload the attendee directory first)" }));
  for (const a of people) select.appendChild(el("option", { value: String(a.id), text: ctx.attendeeName(a.id) + " · " + ctx.tierName(a.tierId) }));
  if (chosen && people.some(a => String(a.id) === chosen)) select.value = chosen;
}

let previewSeq = 0;
export async function renderPreview(ctx) {
  const id = $("preview-attendee").value;
  const pending = document.querySelector('input[name="preview-version"]:checked').value === "pending";
  const feed = $("preview-feed");
  $("preview-error").textContent = "";
  if (!id) { clear(feed); $("preview-title").textContent = ""; return; }
  const seq = ++previewSeq;
  try {
    const answer = await ctx.api.request("POST", "/.canopy/preview", {
      params: { attendee: id, pending: pending ? "true" : undefined }, body: ctx.directoryBody() });
    if (seq !== previewSeq) return;
    $("preview-title").textContent = ctx.attendeeName(id) + " — " + (pending ? "after the next publish" : "as published now");
    clear(feed);
    const items = (answer.data && answer.data.feed) || [];
    if (!items.length) feed.appendChild(el("li", { class: "hint", text: "Nothing to show." }));
    for (const { key, item } of items) feed.appendChild(feedItem(key, item || {}));
  } catch (error) {
    if (seq !== previewSeq) return;
    clear(feed);
    $("preview-error").textContent = error.message;
  }
}

// One feed item as the attendee app draws it: title, then the body of its type. HTML items are shown in a
// sandboxed frame without scripts (the page's policy applies to it as well).
function feedItem(key, item) {
  const type = typeof item.type === "string" ? item.type : "";
  const node = el("li", { class: "feed-item", "data-key": key }, el("h4", { text: String(item.title || "") }));
  const text = value => typeof value === "string" || typeof value === "number" ? String(value) : "";
  if (type === "text") node.appendChild(el("p", { text: text(item.text) }));
  else if (type === "html") {
    const frame = el("iframe", { title: "HTML content: " + text(item.title), sandbox: "", referrerpolicy: "no-referrer" });
    frame.srcdoc = text(item.text);
    node.appendChild(frame);
  } else if (type === "web" || type === "video") {
    if (item.description) node.appendChild(el("p", { text: text(item.description) }));
    const href = safeURL(item.url);
    node.appendChild(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text: (type === "video" ? "▶ Watch: " : "Open: ") + href })
      : el("p", { class: "error", text: "No valid URL" }));
  } else if (type === "survey") {
    if (item.description) node.appendChild(el("p", { text: text(item.description) }));
    node.appendChild(el("button", { type: "button", disabled: true, text: "Start survey " + text(item.surveyId) }));
  } else node.appendChild(el("p", { text: text(item.text || item.description) }));
  return node;
}

// MARK: - Attendees tab

// The stored directory (`private/admin/directory`, written by `PUT /.canopy/directory`), with the attendee count
// of every tier and group worked out here. Read as data: an event without one answers null, not an error.
export async function loadDirectory(ctx) {
  try {
    const answer = await ctx.api.get(API.dataPath("/private/admin/directory"));
    ctx.directory = normalizeDirectory(answer.data);
  } catch (error) {
    ctx.directory = null;
    $("directory-status").textContent = error.message;
  }
  renderDirectory(ctx);
}

export function normalizeDirectory(doc) {
  if (!isObject(doc)) return null;
  const list = value => entries(value).map(([, v]) => v).filter(isObject);
  const attendees = list(doc.attendees).map(a => Object.assign({}, a, {
    id: String(a.id), tierId: a.tierId === undefined || a.tierId === null ? "default" : String(a.tierId),
    groupIds: entries(a.groupIds).map(([, g]) => String(g)) }));
  if (!attendees.length) return null;
  const count = (rows, has) => {
    const out = rows.map(r => Object.assign({}, r, { id: String(r.id) }));
    for (const a of attendees) for (const id of has(a)) if (!out.some(r => r.id === id)) out.push({ id });
    for (const r of out) r.count = attendees.filter(a => has(a).includes(r.id)).length;
    return out;
  };
  return Object.assign({}, doc, {
    attendees,
    tiers: count(list(doc.tiers), a => [a.tierId]),
    groups: count(list(doc.groups), a => a.groupIds),
  });
}

export function renderDirectory(ctx) {
  const view = clear($("directory-view"));
  const dir = ctx.directory;
  if (!dir) { view.appendChild(el("p", { class: "hint", text: "No directory is stored for this event yet." })); return; }
  const people = dir.attendees || [];
  view.appendChild(el("p", { text: people.length + " attendees, " + (dir.tiers || []).length + " tiers, " + (dir.groups || []).length + " groups." }));
  const counts = (title, rows) => el("div", {}, el("h3", { text: title }), el("ul", {}, rows.map(r => el("li", { text: (r.name || r.id) + " (" + r.id + "): " + (r.count || 0) }))));
  view.appendChild(counts("Tiers", dir.tiers || []));
  view.appendChild(counts("Groups", dir.groups || []));
  view.appendChild(el("div", { class: "table-wrap" }, el("table", {},
    el("caption", { class: "visually-hidden", text: "Attendees" }),
    el("thead", {}, el("tr", {}, ["Id", "Name", "Email", "Tier", "Groups"].map(h => el("th", { scope: "col", text: h })))),
    el("tbody", {}, people.map(a => el("tr", {},
      el("td", { text: String(a.id) }), el("td", { text: ctx.attendeeName(a.id) }), el("td", { text: a.email || "" }),
      el("td", { text: ctx.tierName(a.tierId) }), el("td", { text: (a.groupIds || []).map(g => ctx.groupName(g)).join(", ") })))))));
}

export function initDirectory(ctx) {
  $("directory-form").addEventListener("submit", async event => {
    event.preventDefault();
    const file = $("directory-file").files[0];
    const status = $("directory-status");
    if (!file) { status.textContent = "Choose a file first."; return; }
    const text = await file.text();
    const csv = /\.csv$/i.test(file.name) || !/^\s*[[{]/.test(text);
    try {
      const answer = await ctx.api.request("PUT", "/.canopy/directory", { body: text, headers: { "Content-Type": csv ? "text/csv" : "application/json" } });
      status.textContent = "Stored " + (answer.data && answer.data.attendees) + " attendees from " + file.name + ".";
      announce(status.textContent);
      await ctx.directoryChanged();
    } catch (error) { status.textContent = error.message; }
  });
}

// MARK: - Data tab

const data = { path: "/", stream: null, value: null, expanded: new Set(["/"]) };

export function initData(ctx) {
  $("data-form").addEventListener("submit", event => { event.preventDefault(); openData(ctx, $("data-path").value); });
  $("data-add").addEventListener("submit", event => { event.preventDefault(); addChild(ctx); });
}

export function openData(ctx, path) {
  const clean = "/" + String(path || "/").split("/").filter(Boolean).join("/");
  $("data-path").value = clean;
  closeData();
  data.path = clean;
  data.value = null;
  data.expanded = new Set([clean]);
  $("data-status").textContent = "Loading " + clean + "…";
  data.stream = ctx.api.stream(clean, value => {
    data.value = value;
    $("data-status").textContent = "Live: " + clean + " (" + (isObject(value) ? Object.keys(value).length + " children" : value === null ? "no value" : "a value") + ")";
    renderData(ctx);
  }, state => { if (state !== "live") $("data-status").textContent = clean + ": " + state; });
}

export function closeData() {
  if (data.stream) data.stream.close();
  data.stream = null;
}

function join(base, key) { return (base === "/" ? "" : base) + "/" + key; }

function renderData(ctx) {
  const tree = clear($("data-tree"));
  const ul = el("ul", {});
  ul.appendChild(dataNode(ctx, data.path, data.path === "/" ? "(root)" : data.path.split("/").pop(), data.value, 0));
  tree.appendChild(ul);
}

function dataNode(ctx, path, key, value, depth) {
  const li = el("li", { "data-path": path });
  const row = el("div", { class: "row" });
  li.appendChild(row);
  if (isObject(value)) {
    const open = data.expanded.has(path);
    row.appendChild(el("button", { type: "button", class: "small", "aria-expanded": open ? "true" : "false",
      "aria-label": (open ? "Collapse " : "Expand ") + path, text: open ? "▾" : "▸",
      onclick: () => { open ? data.expanded.delete(path) : data.expanded.add(path); renderData(ctx); } }));
    row.appendChild(el("span", { class: "key", text: key }));
    row.appendChild(el("span", { class: "hint", text: Object.keys(value).length + " children" }));
    row.appendChild(el("button", { type: "button", class: "small", "aria-label": "Open " + path, text: "Open", onclick: () => openData(ctx, path) }));
    row.appendChild(el("button", { type: "button", class: "small", "aria-label": "Delete " + path, text: "Delete", onclick: () => deletePath(ctx, path, value) }));
    if (open) {
      const children = Object.keys(value).sort(compareKeys);
      const ul = el("ul", {});
      for (const childKey of children.slice(0, 500)) ul.appendChild(dataNode(ctx, join(path, childKey), childKey, value[childKey], depth + 1));
      if (children.length > 500) ul.appendChild(el("li", { class: "hint", text: (children.length - 500) + " more: open a child path to see them." }));
      li.appendChild(ul);
    }
  } else {
    row.appendChild(el("span", { class: "key", text: key + ":" }));
    const input = el("input", { type: "text", value: JSON.stringify(value), "aria-label": "Value of " + path, spellcheck: "false", autocomplete: "off" });
    input.addEventListener("keydown", event => { if (event.key === "Enter") { event.preventDefault(); saveValue(ctx, path, input.value); } });
    row.appendChild(input);
    row.appendChild(el("button", { type: "button", class: "small", "aria-label": "Save " + path, text: "Save", onclick: () => saveValue(ctx, path, input.value) }));
    row.appendChild(el("button", { type: "button", class: "small", "aria-label": "Delete " + path, text: "Delete", onclick: () => deletePath(ctx, path, value) }));
  }
  return li;
}

function parseValue(text) {
  try { return { value: JSON.parse(text) }; } catch (error) {
    return { error: "Not JSON: " + error.message + " (write strings in double quotes, e.g. \"hello\")" };
  }
}

async function saveValue(ctx, path, text) {
  const parsed = parseValue(text);
  if (parsed.error) { $("data-status").textContent = parsed.error; return; }
  try {
    await ctx.api.request("PUT", API.dataPath(path), { body: JSON.stringify(parsed.value), headers: { "Content-Type": "application/json" } });
    announce("Saved " + path + ".");
  } catch (error) { $("data-status").textContent = error.message; }
}

async function deletePath(ctx, path, value) {
  if (isObject(value)) {
    const sure = await confirmDialog("Delete " + path + "?", el("p", { text: "This deletes " + path + " and everything below it (" + (countNodes(value) - 1) + " values and objects)." }), { ok: "Delete", danger: true });
    if (!sure) return;
  }
  try {
    await ctx.api.request("DELETE", API.dataPath(path));
    announce("Deleted " + path + ".");
  } catch (error) { $("data-status").textContent = error.message; }
}

async function addChild(ctx) {
  const key = $("data-add-key").value.trim();
  if (!key || /[.#$\[\]\/]/.test(key)) { $("data-status").textContent = "A key must not be empty or contain . # $ [ ] /"; return; }
  const parsed = parseValue($("data-add-value").value);
  if (parsed.error) { $("data-status").textContent = parsed.error; return; }
  await saveValue(ctx, join(data.path, key), JSON.stringify(parsed.value));
  data.expanded.add(data.path);
}

// MARK: - Rules tab

export function initRules(ctx) {
  $("rules-reload").addEventListener("click", () => loadRules(ctx));
  $("rules-save").addEventListener("click", () => saveRules(ctx));
}

export async function loadRules(ctx) {
  $("rules-error").textContent = "";
  try {
    const answer = await ctx.api.get("/.settings/rules.json", { text: true });
    $("rules-text").value = answer.data;
    $("rules-status").textContent = "Loaded the stored rules.";
  } catch (error) { $("rules-status").textContent = error.message; }
}

async function saveRules(ctx) {
  const text = $("rules-text").value;
  const box = clear($("rules-error"));
  if (!await confirmDialog("Replace the rules?", el("p", { text: "The new rules apply at once to every client of this event. Invalid rules are refused and the current ones stay." }), { ok: "Replace rules" })) return;
  try {
    await ctx.api.request("PUT", "/.settings/rules.json", { body: text, headers: { "Content-Type": "application/json" } });
    $("rules-status").textContent = "The rules were replaced.";
    announce("The rules were replaced.");
  } catch (error) {
    $("rules-status").textContent = "The rules were not replaced.";
    const body = error.body || {};
    let line = body.line, column = body.column;
    if (!line) {
      const m = /line (\d+)(?:,? column (\d+))?/i.exec(error.message) || /:(\d+):(\d+)/.exec(body.error || "");
      if (m) { line = Number(m[1]); column = Number(m[2] || 1); }
    }
    if (line) {
      box.appendChild(el("p", { id: "rules-error-position", text: "Line " + line + ", column " + (column || 1) + ": " + (body.error || error.message) }));
      const lines = text.split("\n");
      const source = lines[line - 1] !== undefined ? lines[line - 1] : "";
      box.appendChild(el("pre", { class: "snippet", text: line + " | " + source + "\n" + " ".repeat(String(line).length + 3 + Math.max(0, (column || 1) - 1)) + "^" }));
      const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max(0, (column || 1) - 1);
      const area = $("rules-text");
      area.focus();
      area.setSelectionRange(offset, Math.min(text.length, offset + 1));
    } else {
      box.appendChild(el("p", { text: error.message }));
    }
  }
}

export { orderOf, valueAt };
