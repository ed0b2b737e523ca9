// app.js -- the console's entry point: sign-in (the credential lives in sessionStorage, for this tab only), the
// event picker, the tabs, and the live streams of pendingContent, the published content and lastPublishedAt.

import { API } from "./api.js";
import {
  TYPES, initCSV, initEditor, itemRows, publishAction, renderCards, revertAction,
} from "./content.js";
import {
  closeData, fillAttendeePicker, initData, initDirectory, initRules, loadDirectory, loadHistory, loadRules, openData,
  renderDirectory, renderPreview, renderPublishSummary,
} from "./tabs.js";
import { $, el, clear, debounce, formatTime, idList, isObject } from "./util.js";

const KEY_CREDENTIAL = "canopy.console.credential";
const KEY_EVENT = "canopy.console.event";

const ctx = {
  api: null, pending: null, content: null, lastPublishedAt: null, status: null, directory: null, streams: [],
  tab: "content",
  banner(message) {
    const banner = $("banner");
    banner.textContent = message;
    banner.hidden = !message;
    banner.className = "banner";
  },
  notice(message) {
    const banner = $("banner");
    banner.textContent = message;
    banner.hidden = !message;
    banner.className = "banner notice";
  },
  lastPublishedText() { return formatTime(ctx.lastPublishedAt); },
  titleOf(key) {
    const find = source => isObject(source) && isObject(source[key]) && typeof source[key].title === "string" ? source[key].title : null;
    const direct = find(ctx.pending) || find(ctx.content);
    if (direct) return direct;
    // A CSV row's copy: `<item key><row index>`.
    for (const source of [ctx.pending, ctx.content]) {
      if (!isObject(source)) continue;
      for (const [parent, item] of Object.entries(source)) {
        if (key.startsWith(parent) && /^[0-9]+$/.test(key.slice(parent.length)) && isObject(item)) {
          return (item.title || parent) + " (row " + (Number(key.slice(parent.length)) + 1) + ")";
        }
      }
    }
    return key;
  },
  attendee(id) { return ((ctx.directory && ctx.directory.attendees) || []).find(a => String(a.id) === String(id)); },
  attendeeName(id) {
    const a = ctx.attendee(id);
    if (!a) return String(id);
    return a.name || [a.firstName, a.lastName].filter(Boolean).join(" ") || a.email || String(a.id);
  },
  tierName(id) {
    const t = ((ctx.directory && ctx.directory.tiers) || []).find(t => String(t.id) === String(id));
    return t && t.name ? t.name : String(id === undefined || id === null ? "default" : id);
  },
  groupName(id) {
    const g = ((ctx.directory && ctx.directory.groups) || []).find(g => String(g.id) === String(id));
    return g && g.name ? g.name : String(id);
  },
  // The directory's attendees who see a (non-CSV) item, or null without a directory.
  whoSees(item) {
    if (!ctx.directory || !isObject(item)) return null;
    const people = ctx.directory.attendees || [];
    if (typeof item.type === "string" && item.type.endsWith("CSV")) {
      const ids = new Set(Object.values(item.rawData || {}).flatMap(row => idList(row && row.attendeeIds)));
      return people.filter(a => ids.has(String(a.id))).map(a => String(a.id));
    }
    const tiers = idList(item.tierIds), groups = idList(item.groupIds), ids = idList(item.attendeeIds);
    const all = item.checkAll === true || (!tiers.length && !groups.length && !ids.length);
    return people.filter(a => all || tiers.includes(String(a.tierId ?? "default")) || ids.includes(String(a.id))
      || (a.groupIds || []).some(g => groups.includes(String(g)))).map(a => String(a.id));
  },
  // The directory as the dry-run and preview endpoints read it (sent, so they need nothing stored).
  directoryBody() {
    if (!ctx.directory) return undefined;
    return { attendees: ctx.directory.attendees.map(a => ({ id: a.id, tierId: a.tierId, groupIds: a.groupIds })) };
  },
  async directoryChanged() {
    await loadDirectory(ctx);
    fillAttendeePicker(ctx);
    renderAll();
  },
};

const refreshStatus = debounce(async () => {
  if (!ctx.api || !ctx.api.ns) return;
  try {
    const answer = await ctx.api.get("/.canopy/status");
    ctx.status = answer.data;
    renderAll();
  } catch (error) { ctx.banner(error.message); }
}, 120);

const refreshPreview = debounce(() => { if (ctx.tab === "preview") renderPreview(ctx); }, 150);
const refreshHistory = debounce(() => loadHistory(ctx), 150);

function renderAll() {
  renderCards(ctx);
  renderPublishSummary(ctx, itemRows(ctx));
}

// MARK: - sign-in and the event

function showOnly(section) {
  for (const id of ["signin", "events", "console"]) $(id).hidden = id !== section;
  const signedIn = section !== "signin";
  $("sign-out").hidden = !signedIn;
  $("change-event").hidden = section !== "console";
  $("event-name").hidden = section !== "console";
  $("connection").hidden = section !== "console";
}

async function signIn(credential, pick = false) {
  $("signin-error").textContent = "";
  const api = new API(credential);
  try {
    const answer = await api.get("/.canopy/namespaces", { accept: [401, 403] });
    if (answer.status === 403) throw new Error("This credential may not administer any event (an attendee token gets nothing here).");
    if (answer.status === 401) throw new Error("The daemon refused this credential: " + (answer.data && answer.data.error ? answer.data.error : "not valid here") + ".");
    ctx.api = api;
    sessionStorage.setItem(KEY_CREDENTIAL, credential);
    const names = answer.status === 200 && answer.data && Array.isArray(answer.data.namespaces) ? answer.data.namespaces : [];
    const remembered = sessionStorage.getItem(KEY_EVENT);
    if (!pick && remembered && (names.includes(remembered) || !names.length)) { await openEvent(remembered); return; }
    if (!pick && names.length === 1) { await openEvent(names[0]); return; }
    showEvents(names);
  } catch (error) {
    $("signin-error").textContent = error.message;
    showOnly("signin");
    $("credential").focus();
  }
}

function showEvents(names) {
  const list = clear($("event-list"));
  for (const name of names) list.appendChild(el("li", {}, el("button", { type: "button", text: name, onclick: () => openEvent(name) })));
  if (!names.length) list.appendChild(el("li", { class: "hint", text: "No event is listed for this credential; type its namespace below." }));
  $("events-error").textContent = "";
  showOnly("events");
  const first = list.querySelector("button") || $("event-input");
  first.focus();
}

async function openEvent(name) {
  const api = ctx.api;
  api.ns = name;
  try {
    const who = await api.get("/.canopy/whoami", { accept: [404] });
    if (who.status === 200 && who.data && who.data.admin === false) throw new Error("This credential is not an administrator of '" + name + "'.");
    ctx.who = who.status === 200 ? who.data : null;
    await api.get("/.canopy/status");
  } catch (error) {
    api.ns = null;
    const message = error.status === 403 || error.status === 401 ? "This credential may not administer '" + name + "': " + error.message : error.message;
    if ($("console").hidden && $("events").hidden) { $("signin-error").textContent = message; showOnly("signin"); }
    else { $("events-error").textContent = message; showOnly("events"); }
    return;
  }
  sessionStorage.setItem(KEY_EVENT, name);
  $("event-name").textContent = name;
  closeStreams();
  Object.assign(ctx, { pending: null, content: null, lastPublishedAt: null, status: null, directory: null });
  showOnly("console");
  ctx.banner("");
  await loadDirectory(ctx);
  fillAttendeePicker(ctx);
  renderAll();
  openStreams();
  refreshStatus();
  loadHistory(ctx);
  selectTab(ctx.tab, false);
  $("main").focus();
}

const states = new Map();
function openStreams() {
  const track = name => state => {
    states.set(name, state);
    const bad = [...states.entries()].filter(([, s]) => s !== "live");
    $("connection").textContent = bad.length ? "⚠ " + bad.map(([n, s]) => n + " " + s).join(", ") : "● Live";
  };
  ctx.streams = [
    ctx.api.stream("/private/admin/pendingContent", value => { ctx.pending = value; renderAll(); refreshStatus(); refreshPreview(); }, track("drafts")),
    ctx.api.stream("/private/admin/content", value => { ctx.content = value; renderAll(); refreshStatus(); refreshPreview(); refreshHistory(); }, track("published")),
    ctx.api.stream("/private/admin/lastPublishedAt", value => { ctx.lastPublishedAt = value; renderAll(); refreshHistory(); refreshPreview(); }, track("last publish")),
  ];
}

function closeStreams() {
  for (const stream of ctx.streams) stream.close();
  ctx.streams = [];
  states.clear();
  closeData();
}

function signOut() {
  closeStreams();
  sessionStorage.removeItem(KEY_CREDENTIAL);
  sessionStorage.removeItem(KEY_EVENT);
  ctx.api = null;
  $("credential").value = "";
  showOnly("signin");
  $("credential").focus();
}

// MARK: - tabs

const TABS = ["content", "publish", "preview", "directory", "data", "rules"];

function selectTab(name, focus = true) {
  ctx.tab = name;
  for (const tab of TABS) {
    const button = $("tab-" + tab), panel = $("panel-" + tab);
    const on = tab === name;
    button.setAttribute("aria-selected", on ? "true" : "false");
    button.tabIndex = on ? 0 : -1;
    panel.hidden = !on;
  }
  if (focus) $("tab-" + name).focus();
  if (name === "publish") loadHistory(ctx);
  if (name === "preview") renderPreview(ctx);
  if (name === "directory") renderDirectory(ctx);
  if (name === "data") { if (!$("data-tree").firstChild) openData(ctx, $("data-path").value); }
  if (name === "rules") {
    const allowed = !ctx.who || ctx.who.rules !== false;
    $("rules-save").disabled = !allowed;
    if (allowed) loadRules(ctx);
    else $("rules-status").textContent = "Only the daemon's admin credential may read and replace the rules (an organiser token may not).";
  }
}

function initTabs() {
  for (const tab of TABS) $("tab-" + tab).addEventListener("click", () => selectTab(tab));
  $("console").querySelector("[role=tablist]").addEventListener("keydown", event => {
    const at = TABS.indexOf(ctx.tab);
    let next = null;
    if (event.key === "ArrowRight") next = TABS[(at + 1) % TABS.length];
    else if (event.key === "ArrowLeft") next = TABS[(at + TABS.length - 1) % TABS.length];
    else if (event.key === "Home") next = TABS[0];
    else if (event.key === "End") next = TABS[TABS.length - 1];
    if (next) { event.preventDefault(); selectTab(next); }
  });
}

// MARK: - start

function start() {
  initTabs();
  initEditor(ctx);
  initCSV(ctx);
  initDirectory(ctx);
  initData(ctx);
  initRules(ctx);
  $("search").addEventListener("input", () => renderCards(ctx));
  $("publish-all").addEventListener("click", () => publishAction(ctx));
  $("publish-all-top").addEventListener("click", () => publishAction(ctx));
  $("revert").addEventListener("click", () => revertAction(ctx));
  $("preview-attendee").addEventListener("change", () => renderPreview(ctx));
  for (const radio of document.querySelectorAll('input[name="preview-version"]')) radio.addEventListener("change", () => renderPreview(ctx));
  $("signin-form").addEventListener("submit", event => {
    event.preventDefault();
    const credential = $("credential").value.trim();
    if (!credential) { $("signin-error").textContent = "Paste the admin credential or a token."; return; }
    signIn(credential);
  });
  $("event-form").addEventListener("submit", event => {
    event.preventDefault();
    const name = $("event-input").value.trim();
    if (name) openEvent(name);
  });
  $("sign-out").addEventListener("click", signOut);
  $("change-event").addEventListener("click", async () => {
    closeStreams();
    sessionStorage.removeItem(KEY_EVENT);
    await signIn(ctx.api.credential, true);
  });
  const saved = sessionStorage.getItem(KEY_CREDENTIAL);
  if (saved) signIn(saved);
  else { showOnly("signin"); $("credential").focus(); }
  void TYPES;
}

start();
