// content.js -- the content cards, the item editor (with targeting and conflicts), CSV import and the
// confirmations that show a dry-run before every publish action.

import { API, APIError } from "./api.js";
import {
  $, el, clear, announce, byOrderThenKey, canonical, compareKeys, confirmDialog, entries, idList, isObject, pretty,
  safeURL,
} from "./util.js";

export const TYPES = { text: "Text", web: "Web page", html: "HTML", video: "Video", survey: "Survey" };
const PENDING = "/private/admin/pendingContent";

// What a pending item lacks before it can be published (the daemon's `missing`, computed here too so the page
// answers as one types).
export function missingFields(item) {
  if (!isObject(item)) return [];
  const type = typeof item.type === "string" ? item.type : "";
  const has = field => typeof item[field] === "string" ? item[field].trim() !== "" : item[field] !== undefined && item[field] !== null;
  if (type.endsWith("CSV")) return entries(item.rawData).length ? [] : ["target"];
  const out = [];
  if ((type === "text" || type === "html") && !has("text")) out.push("text");
  if ((type === "web" || type === "video") && !has("url")) out.push("url");
  if (type === "survey" && !has("title")) out.push("title");
  return out;
}

const missingWords = { text: "needs its text", url: "needs a URL", title: "needs a title", target: "has no rows (no one would see it)" };
export function describeMissing(field) {
  if (missingWords[field]) return missingWords[field];
  const row = /^rawData\/(\d+)\/(.+)$/.exec(field);
  if (row) return "row " + (Number(row[1]) + 1) + " " + (missingWords[row[2]] || "needs " + row[2]);
  return "needs " + field;
}

// The cards: every pending item, plus published items whose draft was deleted, in (order, key) order.
export function itemRows(ctx) {
  const rows = [];
  const pending = isObject(ctx.pending) ? ctx.pending : {};
  const content = isObject(ctx.content) ? ctx.content : {};
  const statusByKey = new Map(((ctx.status && ctx.status.items) || []).map(item => [item.key, item]));
  for (const key of new Set([...Object.keys(pending), ...Object.keys(content)])) {
    const draft = pending[key], live = content[key];
    const state = draft === undefined ? "removed" : live === undefined ? "added"
      : canonical(draft) === canonical(live) ? "same" : "changed";
    const status = statusByKey.get(key);
    const missing = draft === undefined ? [] : [...new Set([...missingFields(draft), ...((status && status.missing) || [])])];
    rows.push({ key, value: draft === undefined ? live : draft, draft, live, state, missing,
      error: draft !== undefined && status && status.error ? status.error : null });
  }
  return rows.sort(byOrderThenKey);
}

export function targetSummary(ctx, item) {
  if (!isObject(item)) return "";
  if (typeof item.type === "string" && item.type.endsWith("CSV")) {
    const n = entries(item.rawData).length;
    return "Personal rows: " + n + (n === 1 ? " attendee" : " attendees");
  }
  const tiers = idList(item.tierIds), groups = idList(item.groupIds), people = idList(item.attendeeIds);
  if (item.checkAll === true) return "Everyone";
  if (!tiers.length && !groups.length && !people.length) return "Everyone (no list chosen)";
  const parts = [];
  if (tiers.length) parts.push("Tiers: " + tiers.map(id => ctx.tierName(id)).join(", "));
  if (groups.length) parts.push("Groups: " + groups.map(id => ctx.groupName(id)).join(", "));
  if (people.length) parts.push(people.length === 1 ? "1 attendee" : people.length + " attendees");
  return parts.join(" · ");
}

let drawn = "";
export function renderCards(ctx) {
  const list = $("cards");
  const query = $("search").value.trim().toLowerCase();
  const rows = itemRows(ctx);
  // Redrawn only when something shown changed (focus and a drag in progress survive other events).
  const signature = JSON.stringify([query, rows, ctx.lastPublishedAt, !!ctx.directory && ctx.directory.attendees.length]);
  if (signature === drawn) return;
  drawn = signature;
  const shown = rows.filter(row => !query || String((row.value && row.value.title) || "").toLowerCase().includes(query));
  const focusedKey = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  const focusedAction = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.action : null;
  clear(list);
  const movable = rows.filter(row => row.draft !== undefined);
  for (const row of shown) list.appendChild(card(ctx, row, movable, !query));
  if (!shown.length) list.appendChild(el("li", { class: "hint", text: rows.length ? "No item's title matches '" + query + "'." : "No content yet: create an item." }));
  const counts = { added: 0, changed: 0, removed: 0, same: 0 };
  let incomplete = 0, invalid = 0;
  for (const row of rows) { counts[row.state]++; if (row.missing.length) incomplete++; if (row.error) invalid++; }
  $("content-summary").textContent = rows.length + " items: " + counts.same + " live, " + counts.added + " added, "
    + counts.changed + " changed, " + counts.removed + " removed" + (incomplete ? ", " + incomplete + " incomplete" : "")
    + (invalid ? ", " + invalid + " invalid" : "") + ". Last published: " + ctx.lastPublishedText() + ".";
  $("reorder-hint").hidden = !!query;
  if (focusedKey) {
    const selector = focusedAction ? '[data-key="' + CSS.escape(focusedKey) + '"][data-action="' + focusedAction + '"]'
      : 'li[data-key="' + CSS.escape(focusedKey) + '"]';
    const again = list.querySelector(selector) || list.querySelector('li[data-key="' + CSS.escape(focusedKey) + '"]');
    if (again) again.focus();
  }
}

function card(ctx, row, movable, canMove) {
  const item = row.value || {};
  const title = typeof item.title === "string" && item.title !== "" ? item.title : "(untitled)";
  const type = typeof item.type === "string" ? item.type : "";
  const badges = [];
  if (row.state === "same") badges.push(el("span", { class: "badge live", text: "Live" }));
  else if (row.state === "removed") badges.push(el("span", { class: "badge state", text: "Removed (still live until publish)" }));
  else badges.push(el("span", { class: "badge draft", text: "Draft" }), el("span", { class: "badge state", text: row.state }));
  if (row.error) badges.push(el("span", { class: "badge invalid", text: "Invalid" }));
  if (row.missing.length) badges.push(el("span", { class: "badge invalid", text: "Incomplete" }));
  const index = movable.findIndex(other => other.key === row.key);
  const classes = ["card", "state-" + row.state];
  if (row.error) classes.push("invalid");
  if (row.missing.length) classes.push("incomplete");
  const actions = [];
  const act = (label, action, handler, extra = {}) => el("button", Object.assign({
    type: "button", class: "small", "data-key": row.key, "data-action": action, "aria-label": label + " '" + title + "'",
    onclick: handler, text: label }, extra));
  if (row.draft !== undefined) {
    actions.push(act("Edit", "edit", () => openEditor(ctx, row.key)));
    actions.push(act("Delete", "delete", () => deleteItem(ctx, row.key, title)));
    actions.push(act("Publish this", "publish", () => publishAction(ctx, { item: row.key })));
    if (canMove) {
      actions.push(act("Move up", "up", () => move(ctx, row.key, -1), { disabled: index <= 0 }));
      actions.push(act("Move down", "down", () => move(ctx, row.key, 1), { disabled: index < 0 || index >= movable.length - 1 }));
    }
  }
  if (row.live !== undefined) actions.push(act("Unpublish", "unpublish", () => unpublishAction(ctx, row.key, title)));
  const node = el("li", {
    class: classes.join(" "), tabindex: "0", "data-key": row.key, draggable: row.draft !== undefined && canMove ? "true" : "false",
    "aria-label": title + ", " + (TYPES[type] || type || "no type") + ", " + (row.state === "same" ? "live" : row.state),
  },
    el("div", { class: "card-head" },
      row.draft !== undefined && canMove ? el("span", { class: "drag-handle", "aria-hidden": "true", text: "⠿" }) : null,
      el("h3", { class: "card-title", text: title }),
      el("span", { class: "badge type", text: TYPES[type] || type || "no type" }), badges),
    el("p", { class: "card-meta", text: "Order " + (typeof item.order === "number" ? item.order : "?") + " · " + targetSummary(ctx, item) + " · key " + row.key }),
    row.error ? el("p", { class: "error", text: "Invalid: " + row.error }) : null,
    row.missing.length ? el("ul", { class: "missing" }, row.missing.map(field => el("li", { text: "Incomplete: " + describeMissing(field) }))) : null,
    el("div", { class: "card-actions" }, actions));
  node.addEventListener("keydown", event => {
    if (event.target !== node || !canMove || row.draft === undefined) return;
    if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
      event.preventDefault();
      move(ctx, row.key, event.key === "ArrowUp" ? -1 : 1);
    } else if (event.key === "Enter") {
      event.preventDefault();
      openEditor(ctx, row.key);
    }
  });
  node.addEventListener("dragstart", event => {
    event.dataTransfer.setData("text/plain", row.key);
    event.dataTransfer.effectAllowed = "move";
    node.classList.add("dragging");
  });
  node.addEventListener("dragend", () => node.classList.remove("dragging"));
  node.addEventListener("dragover", event => { if (row.draft !== undefined) { event.preventDefault(); node.classList.add("drop-target"); } });
  node.addEventListener("dragleave", () => node.classList.remove("drop-target"));
  node.addEventListener("drop", event => {
    event.preventDefault();
    node.classList.remove("drop-target");
    const from = event.dataTransfer.getData("text/plain");
    if (from && from !== row.key) reorderTo(ctx, from, row.key);
  });
  return node;
}

// Moves `key` by one place among the pending items.
function move(ctx, key, delta) {
  const keys = itemRows(ctx).filter(row => row.draft !== undefined).map(row => row.key);
  const at = keys.indexOf(key);
  const to = at + delta;
  if (at < 0 || to < 0 || to >= keys.length) return;
  keys.splice(at, 1);
  keys.splice(to, 0, key);
  saveOrder(ctx, keys, key);
}

function reorderTo(ctx, from, target) {
  const keys = itemRows(ctx).filter(row => row.draft !== undefined).map(row => row.key);
  const at = keys.indexOf(from), to = keys.indexOf(target);
  if (at < 0 || to < 0) return;
  keys.splice(at, 1);
  keys.splice(to, 0, from);
  saveOrder(ctx, keys, from);
}

// One atomic PATCH of the `order` of every item whose place changed.
async function saveOrder(ctx, keys, moved) {
  const update = {};
  keys.forEach((key, index) => { if (ctx.pending[key].order !== index) update[key + "/order"] = index; });
  if (!Object.keys(update).length) return;
  try {
    await ctx.api.request("PATCH", API.dataPath(PENDING), { body: update });
    const title = ctx.titleOf(moved);
    announce("Moved '" + title + "' to position " + (keys.indexOf(moved) + 1) + " of " + keys.length + ".");
  } catch (error) { ctx.banner(error.message); }
}

async function deleteItem(ctx, key, title) {
  const sure = await confirmDialog("Delete '" + title + "'?",
    el("p", { text: "The draft is deleted. " + (ctx.content && ctx.content[key] ? "It stays live until the next publish (or unpublish it)." : "It was never published.") }),
    { ok: "Delete draft", danger: true });
  if (!sure) return;
  try {
    await ctx.api.request("DELETE", API.dataPath(PENDING + "/" + key));
    announce("Deleted the draft '" + title + "'.");
  } catch (error) { ctx.banner(error.message); }
}

// MARK: - the editor

const editor = { key: null, etag: null, original: null, isNew: false };

export function initEditor(ctx) {
  $("ed-type").addEventListener("change", () => updateEditorFields(ctx));
  for (const id of ["ed-title", "ed-text", "ed-url", "ed-survey", "ed-order"]) $(id).addEventListener("input", () => showMissing());
  $("ed-everyone").addEventListener("change", () => updateCovered(ctx));
  $("ed-cancel").addEventListener("click", () => $("editor").close());
  $("editor-form").addEventListener("submit", event => { event.preventDefault(); saveEditor(ctx, false); });
  $("new-item").addEventListener("click", () => openNew(ctx, $("new-type").value));
}

function openNew(ctx, type) {
  const rows = itemRows(ctx).filter(row => row.draft !== undefined);
  const last = rows.length ? Math.max(...rows.map(row => typeof row.draft.order === "number" ? row.draft.order : 0)) : -1;
  fillEditor(ctx, null, { type, title: "", order: last + 1, checkAll: false }, null, true);
}

async function openEditor(ctx, key) {
  try {
    const answer = await ctx.api.get(API.dataPath(PENDING + "/" + key), { headers: { "X-Firebase-ETag": "true" } });
    if (answer.data === null) { ctx.banner("That item was deleted meanwhile."); return; }
    fillEditor(ctx, key, answer.data, answer.etag, false);
  } catch (error) { ctx.banner(error.message); }
}

function fillEditor(ctx, key, item, etag, isNew) {
  Object.assign(editor, { key, etag, original: item, isNew });
  const type = typeof item.type === "string" ? item.type : "text";
  const isCSV = type.endsWith("CSV");
  $("editor-title").textContent = isNew ? "New " + (TYPES[type] || type) + " item" : "Edit '" + (item.title || "(untitled)") + "'";
  const select = $("ed-type");
  for (const option of [...select.options]) if (option.dataset.extra) option.remove();
  if (!TYPES[type]) select.appendChild(el("option", { value: type, "data-extra": "1", text: type }));
  select.value = type;
  select.disabled = isCSV;
  $("ed-title").value = typeof item.title === "string" ? item.title : "";
  $("ed-text").value = typeof item.text === "string" ? item.text : "";
  $("ed-url").value = typeof item.url === "string" ? item.url : "";
  $("ed-survey").value = item.surveyId !== undefined && item.surveyId !== null ? String(item.surveyId) : "";
  $("ed-description").value = typeof item.description === "string" ? item.description : "";
  $("ed-order").value = typeof item.order === "number" ? String(item.order) : "";
  $("ed-everyone").checked = item.checkAll === true;
  $("ed-conflict").hidden = true;
  $("ed-error").textContent = "";
  const csv = clear($("ed-csv"));
  csv.hidden = !isCSV;
  $("ed-target").hidden = isCSV;
  if (isCSV) {
    const rows = entries(item.rawData);
    csv.appendChild(el("p", { text: rows.length + " personal rows (one attendee each). Import a new CSV to replace them." }));
    csv.appendChild(el("div", { class: "table-wrap" }, el("table", {},
      el("thead", {}, el("tr", {}, el("th", { text: "Row" }), el("th", { text: "Attendee" }), el("th", { text: "Content" }))),
      el("tbody", {}, rows.map(([index, row]) => el("tr", {},
        el("td", { text: String(Number(index) + 1) }),
        el("td", { text: idList(row && row.attendeeIds).map(id => ctx.attendeeName(id)).join(", ") || (row && row.email) || "?" }),
        el("td", { text: String((row && (row.url || row.text || row.description)) || "") })))))));
  }
  buildTargetLists(ctx, item);
  updateEditorFields(ctx);
  $("editor").showModal();
  $("ed-title").focus();
}

function updateEditorFields(ctx) {
  const type = $("ed-type").value;
  for (const node of $("editor-form").querySelectorAll("[data-for]")) node.hidden = !node.dataset.for.split(" ").includes(type);
  $("ed-text").previousElementSibling.textContent = type === "html" ? "HTML" : "Text";
  showMissing();
}

function currentItem(ctx) {
  const item = Object.assign({}, editor.original || {});
  const type = $("ed-type").value;
  item.type = type;
  item.title = $("ed-title").value;
  const order = Number($("ed-order").value);
  item.order = $("ed-order").value.trim() !== "" && isFinite(order) ? order : 0;
  if (type.endsWith("CSV")) return item;
  const fields = { text: ["text"], html: ["text"], web: ["url", "description"], video: ["url", "description"], survey: ["surveyId", "description"] }[type] || [];
  for (const field of ["text", "url", "surveyId", "description"]) {
    if (!fields.includes(field)) { delete item[field]; continue; }
    const value = { text: $("ed-text"), url: $("ed-url"), surveyId: $("ed-survey"), description: $("ed-description") }[field].value;
    if (value.trim() === "") delete item[field];
    else item[field] = field === "surveyId" && /^[0-9]{1,15}$/.test(value.trim()) ? Number(value.trim()) : value;
  }
  item.checkAll = $("ed-everyone").checked;
  const picked = readTargets();
  for (const list of ["tierIds", "groupIds", "attendeeIds"]) {
    if (picked[list].length) item[list] = picked[list];
    else delete item[list];
  }
  return item;
}

function showMissing() {
  const item = currentItem();
  const list = clear($("ed-missing"));
  for (const field of missingFields(item)) list.appendChild(el("li", { text: "Before it can be published, this item " + describeMissing(field) + "." }));
}

// Targeting: tiers and groups with their attendee counts, attendees with "covered" markers.
function buildTargetLists(ctx, item) {
  const box = clear($("ed-lists"));
  const dir = ctx.directory;
  $("ed-no-directory").hidden = !!dir;
  const chosen = { tierIds: idList(item.tierIds), groupIds: idList(item.groupIds), attendeeIds: idList(item.attendeeIds) };
  if (!dir) {
    for (const [list, label] of [["tierIds", "Tier ids"], ["groupIds", "Group ids"], ["attendeeIds", "Attendee ids"]]) {
      box.appendChild(el("label", { for: "ed-" + list, text: label + " (separated by commas)" }));
      box.appendChild(el("input", { type: "text", id: "ed-" + list, "data-list": list, value: chosen[list].join(", "), autocomplete: "off" }));
    }
    return;
  }
  const pickList = (list, legend, options, extraClass) => {
    const known = new Set(options.map(o => o.id));
    for (const id of chosen[list]) if (!known.has(id)) options.push({ id, label: id + " (not in the directory)" });
    return el("fieldset", {},
      el("legend", { text: legend }),
      list === "attendeeIds" ? [
        el("label", { for: "ed-attendee-filter", class: "inline", text: "Find attendee" }),
        el("input", { id: "ed-attendee-filter", type: "search", autocomplete: "off", oninput: event => filterAttendees(event.target.value) }),
      ] : null,
      el("ul", { class: "pick-list " + (extraClass || "") }, options.map(option => el("li", { "data-search": (option.search || option.label).toLowerCase() },
        el("label", {},
          el("input", { type: "checkbox", "data-list": list, value: option.id, checked: chosen[list].includes(option.id), onchange: () => updateCovered(ctx) }),
          " " + option.label),
        list === "attendeeIds" ? el("span", { class: "covered", "data-covered": option.id }) : null))));
  };
  box.appendChild(pickList("tierIds", "Tiers", (dir.tiers || []).map(t => ({ id: String(t.id), label: (t.name || t.id) + " (" + (t.count || 0) + " attendees)" }))));
  box.appendChild(pickList("groupIds", "Groups", (dir.groups || []).map(g => ({ id: String(g.id), label: (g.name || g.id) + " (" + (g.count || 0) + " attendees)" }))));
  box.appendChild(pickList("attendeeIds", "Attendees", (dir.attendees || []).map(a => ({
    id: String(a.id), label: ctx.attendeeName(a.id) + " · " + ctx.tierName(a.tierId) + (a.email ? " · " + a.email : ""),
    search: [a.id, a.name, a.email, a.firstName, a.lastName].filter(Boolean).join(" "),
  })), "attendees"));
  updateCovered(ctx);
}

function filterAttendees(query) {
  const q = query.trim().toLowerCase();
  for (const li of $("ed-lists").querySelectorAll(".attendees li")) li.hidden = !!q && !li.dataset.search.includes(q);
}

function readTargets() {
  const out = { tierIds: [], groupIds: [], attendeeIds: [] };
  for (const input of $("ed-lists").querySelectorAll("input[data-list]")) {
    const list = input.dataset.list;
    if (input.type === "checkbox") { if (input.checked) out[list].push(input.value); }
    else out[list].push(...input.value.split(",").map(s => s.trim()).filter(Boolean));
  }
  // Tier and group ids that are numbers are stored as numbers, as the seed does.
  for (const list of ["tierIds", "groupIds"]) out[list] = out[list].map(id => /^[1-9][0-9]{0,14}$/.test(id) ? Number(id) : id);
  return out;
}

function updateCovered(ctx) {
  const dir = ctx.directory;
  if (!dir) return;
  const picked = readTargets();
  const tiers = new Set(picked.tierIds.map(String)), groups = new Set(picked.groupIds.map(String));
  const everyone = $("ed-everyone").checked;
  const byID = new Map((dir.attendees || []).map(a => [String(a.id), a]));
  for (const span of $("ed-lists").querySelectorAll("[data-covered]")) {
    const a = byID.get(span.dataset.covered);
    let why = "";
    if (everyone) why = "covered: everyone";
    else if (a && tiers.has(String(a.tierId))) why = "covered by tier " + ctx.tierName(a.tierId);
    else if (a) {
      const group = (a.groupIds || []).map(String).find(g => groups.has(g));
      if (group !== undefined) why = "covered by group " + ctx.groupName(group);
    }
    span.textContent = why;
  }
}

async function saveEditor(ctx, overwrite) {
  const item = currentItem(ctx);
  $("ed-error").textContent = "";
  try {
    if (editor.isNew) {
      const answer = await ctx.api.request("POST", API.dataPath(PENDING), { body: item });
      announce("Created the draft '" + item.title + "'.");
      editor.key = answer.data && answer.data.name;
    } else {
      const answer = await ctx.api.request("PUT", API.dataPath(PENDING + "/" + editor.key), {
        body: item, headers: { "if-match": editor.etag }, accept: [412] });
      if (answer.status === 412) { showConflict(ctx, item, answer.data, answer.etag); return; }
      announce("Saved the draft '" + item.title + "'.");
    }
    $("editor").close();
  } catch (error) {
    $("ed-error").textContent = error.message;
  }
}

// Someone else saved the item since this editor loaded it: both versions side by side, and a choice.
function showConflict(ctx, mine, theirs, theirETag) {
  const box = clear($("ed-conflict"));
  box.hidden = false;
  box.appendChild(el("h3", { text: "Conflict: this item was changed by someone else while you edited it" }));
  box.appendChild(el("p", { text: theirs === null ? "It was deleted." : "Nothing was saved. Compare the two versions and choose." }));
  box.appendChild(el("div", { class: "versions" },
    el("div", {}, el("h4", { text: "Your version" }), el("pre", { class: "mine", text: pretty(mine) })),
    el("div", {}, el("h4", { text: "Their version (saved now)" }), el("pre", { class: "theirs", text: pretty(theirs) }))));
  box.appendChild(el("div", { class: "toolbar" },
    el("button", { type: "button", id: "conflict-mine", class: "primary", text: "Save mine over theirs", onclick: () => {
      editor.etag = theirETag;
      if (theirs === null) editor.isNew = false;
      saveEditor(ctx, true);
    } }),
    theirs === null ? null : el("button", { type: "button", id: "conflict-theirs", text: "Discard mine, edit theirs", onclick: () => {
      fillEditor(ctx, editor.key, theirs, theirETag, false);
    } })));
  announce("Conflict: the item changed while you edited it.");
  $("conflict-mine").focus();
}

// MARK: - CSV import

export function initCSV(ctx) {
  $("import-csv").addEventListener("click", () => {
    $("csv-result").textContent = "";
    $("csv-error").textContent = "";
    if (!ctx.directory) $("csv-error").textContent = "No attendee directory is stored: upload one on the Attendees tab first (rows are checked against it).";
    $("csv-dialog").showModal();
    $("csv-item-title").focus();
  });
  $("csv-cancel").addEventListener("click", () => $("csv-dialog").close());
  $("csv-check").addEventListener("click", () => importCSV(ctx, true));
  $("csv-form").addEventListener("submit", event => { event.preventDefault(); importCSV(ctx, false); });
}

async function importCSV(ctx, check) {
  const result = clear($("csv-result"));
  $("csv-error").textContent = "";
  const file = $("csv-file").files[0];
  const title = $("csv-item-title").value.trim();
  if (!title) { $("csv-error").textContent = "Give the item a title."; return; }
  if (!file) { $("csv-error").textContent = "Choose a CSV file."; return; }
  const text = await file.text();
  let answer;
  try {
    answer = await ctx.api.request("POST", "/.canopy/import-csv", {
      params: { type: $("csv-type").value, title, check: check ? "true" : undefined },
      body: text, headers: { "Content-Type": "text/csv" } });
  } catch (error) {
    $("csv-error").textContent = error.message;
    if (error instanceof APIError && error.body && Array.isArray(error.body.rejected)) showRejected(result, error.body);
    return;
  }
  const data = answer.data || {};
  result.appendChild(el("p", { class: "summary", text: (check ? "Would import " : "Imported ") + data.imported + " of " + data.total + " rows." }));
  showRejected(result, data);
  if (!check) announce("Imported " + data.imported + " of " + data.total + " rows.");
}

function showRejected(box, data) {
  if (!data.rejected || !data.rejected.length) return;
  box.appendChild(el("p", { text: "Rejected rows:" }));
  box.appendChild(el("ul", {}, data.rejected.map(r => el("li", { text: "Row " + r.row + (r.value ? " (" + r.value + ")" : "") + ": " + r.error }))));
}

// MARK: - publish actions, each confirmed with what it would change

// The dry-run as words: which locations change, who gains and loses which item.
export function dryRunView(ctx, dry) {
  const box = el("div", { class: "dry" });
  if (!dry) return box;
  if (dry.ok === false) {
    const e = dry.error || {};
    box.appendChild(el("p", { class: "error", text: "It cannot be published: " + (e.message || "invalid content") }));
    return box;
  }
  if (dry.incomplete && dry.incomplete.length) {
    box.appendChild(el("p", { class: "error", text: "Incomplete items: complete them (or delete them) before publishing." }));
    box.appendChild(el("ul", { class: "missing" }, dry.incomplete.map(i => el("li", { text: "'" + (i.title || i.key) + "' " + (i.missing || []).map(describeMissing).join(", ") }))));
  }
  if (dry.computedByPage) box.appendChild(el("p", { class: "hint", text: "Worked out in this page from the published content and the stored directory." }));
  const locations = dry.locations || [];
  box.appendChild(el("h3", { text: locations.length ? "Locations that change (" + locations.length + ")" : "No location changes." }));
  if (locations.length) box.appendChild(el("ul", { class: "locations" }, locations.map(loc => el("li", {},
    el("code", { text: loc.path }), ": ", changeWords(ctx, loc.added, loc.removed, loc.changed)))));
  if (Array.isArray(dry.attendees)) {
    box.appendChild(el("h3", { text: dry.attendees.length ? "Attendees whose feed changes (" + dry.attendees.length + ")" : "No attendee's feed changes." }));
    box.appendChild(el("ul", { class: "attendees" }, dry.attendees.map(a => el("li", { "data-attendee": a.id },
      el("strong", { text: ctx.attendeeName(a.id) }), " (" + a.id + "): ", changeWords(ctx, a.gains, a.loses, a.changes)))));
  } else {
    box.appendChild(el("p", { class: "hint", text: "Upload the attendee directory to see who gains and who loses each item." }));
  }
  return box;
}

function changeWords(ctx, added, removed, changed) {
  const parts = [];
  const list = (keys, cls, verb) => {
    if (keys && keys.length) parts.push(el("span", { class: cls, text: verb + " " + keys.map(k => "'" + ctx.titleOf(k) + "'").join(", ") }));
  };
  list(added, "gain", "gains");
  list(removed, "lose", "loses");
  list(changed, "", "changes");
  return parts.flatMap((p, i) => i ? ["; ", p] : [p]);
}

// The daemon's dry-run describes publishing all of pendingContent only. For one item, an unpublish or a rollback
// the page works out the same answer from the published content before and after, with the visibility rule of
// the publish engine (ContentItem.isVisible): who gains, loses or sees a change of which item.
export function localDryRun(ctx, before, after) {
  const old = isObject(before) ? before : {}, now = isObject(after) ? after : {};
  const added = [], removed = [], changed = [];
  for (const key of new Set([...Object.keys(old), ...Object.keys(now)])) {
    if (!(key in old)) added.push(key);
    else if (!(key in now)) removed.push(key);
    else if (canonical(old[key]) !== canonical(now[key])) changed.push(key);
  }
  const dry = { ok: true, computedByPage: true,
    locations: added.length || removed.length || changed.length ? [{ path: "/private/admin/content", added, removed, changed }] : [] };
  if (ctx.directory) {
    dry.attendees = [];
    for (const a of ctx.directory.attendees) {
      const was = visibleCopies(old, a), will = visibleCopies(now, a);
      const gains = [], loses = [], changes = [];
      for (const key of new Set([...was.keys(), ...will.keys()])) {
        if (!was.has(key)) gains.push(key);
        else if (!will.has(key)) loses.push(key);
        else if (was.get(key) !== will.get(key)) changes.push(key);
      }
      if (gains.length || loses.length || changes.length) dry.attendees.push({ id: a.id, gains, loses, changes });
    }
  }
  return dry;
}

// The copies of `content` attendee `a` sees: key → canonical text (a CSV row's copy is `<key><row index>`).
function visibleCopies(content, a) {
  const out = new Map();
  const same = (x, y) => String(x) === String(y);
  for (const [key, item] of Object.entries(content)) {
    if (!isObject(item)) continue;
    const stripped = Object.assign({}, item);
    for (const list of ["tierIds", "groupIds", "attendeeIds"]) delete stripped[list];
    if (typeof item.type === "string" && item.type.endsWith("CSV")) {
      for (const [index, row] of entries(item.rawData)) {
        if (idList(row && row.attendeeIds).some(id => same(id, a.id))) out.set(key + index, canonical(row));
      }
      continue;
    }
    const tiers = idList(item.tierIds), groups = idList(item.groupIds), ids = idList(item.attendeeIds);
    const global = item.checkAll === true || (!tiers.length && !groups.length && !ids.length);
    if (global || tiers.some(t => same(t, a.tierId)) || ids.some(i => same(i, a.id))
      || groups.some(g => (a.groupIds || []).some(m => same(m, g)))) out.set(key, canonical(stripped));
  }
  return out;
}

async function dryRun(ctx, params) {
  const answer = await ctx.api.request("POST", "/.canopy/dry-run", { params, body: ctx.directoryBody() });
  return answer.data;
}

async function run(ctx, path, params, headers, done) {
  try {
    const answer = await ctx.api.request("POST", path, { params, headers });
    announce(done);
    ctx.notice(done);
    return answer;
  } catch (error) {
    ctx.banner(error.status === 412 ? "The drafts changed since you reviewed them (another organiser?): nothing was published. Review the dry-run again." : error.message);
    return null;
  }
}

export async function publishAction(ctx, { item } = {}) {
  try {
    const status = await ctx.api.get("/.canopy/status");
    const etag = status.etag;
    let dry;
    if (item) {
      const after = Object.assign({}, ctx.content || {});
      after[item] = ctx.pending[item];
      dry = localDryRun(ctx, ctx.content, after);
      const missing = missingFields(ctx.pending[item]);
      if (missing.length) dry.incomplete = [{ key: item, title: ctx.titleOf(item), missing }];
    } else dry = await dryRun(ctx, {});
    const what = item ? "'" + ctx.titleOf(item) + "'" : "all drafts";
    const blocked = !dry || dry.ok === false || (dry.incomplete && dry.incomplete.length > 0);
    const sure = await confirmDialog("Publish " + what + "?", dryRunView(ctx, dry), { ok: "Publish", okDisabled: blocked });
    if (!sure) return;
    await run(ctx, "/.canopy/publish", item ? { item, complete: "required" } : { complete: "required" }, item || !etag ? {} : { "if-match": etag }, "Published " + what + ".");
  } catch (error) { ctx.banner(error.message); }
}

async function unpublishAction(ctx, key, title) {
  // No dry-run for an unpublish: the page says who loses it from the targeting and the directory.
  const after = Object.assign({}, ctx.content || {});
  delete after[key];
  const body = el("div", {},
    el("p", { text: "'" + title + "' is removed from every location it was published to. The draft stays." }),
    dryRunView(ctx, localDryRun(ctx, ctx.content, after)));
  if (!await confirmDialog("Unpublish '" + title + "'?", body, { ok: "Unpublish", danger: true })) return;
  await run(ctx, "/.canopy/unpublish", { item: key }, {}, "Unpublished '" + title + "'.");
}

export async function revertAction(ctx) {
  const rows = itemRows(ctx).filter(row => row.state !== "same");
  const body = el("div", { class: "dry" },
    el("p", { text: rows.length ? "These drafts are replaced by the published version (nothing attendees see changes):" : "There are no unpublished edits." }),
    el("ul", {}, rows.map(row => el("li", { text: "'" + ctx.titleOf(row.key) + "': " + (row.state === "added" ? "deleted (never published)" : row.state === "removed" ? "restored" : "edits discarded") }))));
  if (!await confirmDialog("Revert all drafts?", body, { ok: "Revert", danger: true, okDisabled: !rows.length })) return;
  await run(ctx, "/.canopy/revert", {}, {}, "Reverted the drafts to the published content.");
}

export async function rollbackAction(ctx, entry) {
  try {
    // The entry names item versions: the daemon puts its snapshot together (entries hold no copy of the content).
    const snapshot = await ctx.api.get("/.canopy/history", { params: { id: entry.id } });
    const dry = localDryRun(ctx, ctx.content, snapshot.data && snapshot.data.content);
    const when = entry.publishedAt ? new Date(entry.publishedAt).toLocaleString() : entry.id;
    const body = el("div", {},
      el("p", { text: "The content of that publish (" + (entry.itemCount ?? "?") + " items) is published again and becomes the drafts too: unpublished edits are discarded." }),
      dryRunView(ctx, dry));
    if (!await confirmDialog("Roll back to the publish of " + when + "?", body, { ok: "Roll back", danger: true, okDisabled: dry && dry.ok === false })) return;
    await run(ctx, "/.canopy/rollback", { to: entry.id }, {}, "Rolled back to the publish of " + when + ".");
  } catch (error) { ctx.banner(error.message); }
}

export { compareKeys };
