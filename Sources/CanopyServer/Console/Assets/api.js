// api.js -- the daemon's public APIs: REST with the credential, `/.canopy/*`, and Server-Sent Event streams.

import { applyAt } from "./util.js";

export class APIError extends Error {
  constructor(status, message, body, etag) {
    super(message);
    this.status = status;
    this.body = body;
    this.etag = etag;
  }
}

export class API {
  constructor(credential) {
    this.credential = credential;
    this.ns = null;
  }

  // The query is written with encodeURIComponent: the daemon, like Firebase, takes `+` as a plus, not a space
  // (URLSearchParams would write spaces as `+`).
  url(path, params) {
    const url = new URL(path, location.origin);
    const pairs = [];
    if (this.ns) pairs.push(["ns", this.ns]);
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null) pairs.push([k, String(v)]);
    url.search = pairs.map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&");
    return url;
  }

  // One request; answers {status, data, etag}, throws APIError (with the daemon's message in words) otherwise.
  // `accept` lists statuses that are answers rather than errors (404 for "no directory", 412 for a conflict).
  async request(method, path, { params, body, headers, text, accept } = {}) {
    const init = { method, headers: Object.assign({ Authorization: "Bearer " + this.credential }, headers || {}) };
    if (body !== undefined) {
      if (typeof body === "string") init.body = body;
      else { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
    }
    let response;
    try {
      response = await fetch(this.url(path, params), init);
    } catch (error) {
      throw new APIError(0, "Could not reach the daemon (" + (error && error.message ? error.message : "network error") + ").");
    }
    const raw = await response.text();
    let data = raw;
    if (!text) {
      try { data = raw === "" ? null : JSON.parse(raw); } catch { data = raw; }
    }
    const etag = response.headers.get("ETag");
    if (response.ok || (accept && accept.includes(response.status))) return { status: response.status, data, etag };
    throw new APIError(response.status, describe(response.status, data), data, etag);
  }

  get(path, options) { return this.request("GET", path, options); }

  // A data path ("/a/b") as its REST URL path.
  static dataPath(path) {
    const clean = path.split("/").filter(Boolean).map(encodeURIComponent).join("/");
    return "/" + clean + ".json";
  }

  // An SSE stream of the value at `path`; `onValue(value)` after each event, `onState(text)` on connection changes.
  stream(path, onValue, onState) { return new Stream(this, path, onValue, onState); }
}

function describe(status, data) {
  const message = data && typeof data === "object" && typeof data.error === "string" ? data.error
    : typeof data === "string" && data.trim() ? data.trim().slice(0, 300) : "";
  const what = {
    400: "The daemon refused the request", 401: "Not allowed", 403: "Not an administrator of this event",
    404: "Not found", 409: "Conflict", 412: "Changed since you loaded it", 413: "Too large",
    500: "The daemon could not store it", 503: "The daemon cannot serve this event now",
  }[status] || "The daemon answered " + status;
  return message ? what + ": " + message : what + ".";
}

export class Stream {
  constructor(api, path, onValue, onState) {
    this.value = null;
    this.loaded = false;
    this.closed = false;
    const url = api.url(API.dataPath(path), { auth: api.credential });
    this.source = new EventSource(url.href);
    const handle = merge => event => {
      let message;
      try { message = JSON.parse(event.data); } catch { return; }
      if (!message || typeof message.path !== "string") return;
      this.value = applyAt(this.value, message.path, message.data, merge);
      this.loaded = true;
      onValue(this.value);
    };
    this.source.addEventListener("put", handle(false));
    this.source.addEventListener("patch", handle(true));
    this.source.addEventListener("open", () => onState && onState("live"));
    this.source.addEventListener("cancel", event => {
      onState && onState("cancelled: " + (event.data && event.data !== "null" ? event.data : "permission revoked"));
      this.close();
    });
    this.source.addEventListener("auth_revoked", () => {
      onState && onState("signed out: the credential expired");
      this.close();
    });
    this.source.addEventListener("error", () => {
      if (this.closed) return;
      onState && onState(this.source.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting");
    });
  }

  close() {
    this.closed = true;
    this.source.close();
  }
}
