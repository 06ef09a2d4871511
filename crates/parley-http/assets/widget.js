/*
 * Parley chat widget. Embed with:
 *   <script async src="https://chat.example.com/widget.js"
 *           data-api-base="https://chat.example.com"
 *           data-installation-token="inst_..."></script>
 *
 * No dependencies. Everything lives in a Shadow DOM, every message is
 * rendered as text, and every failure stays inside: a console warning,
 * never an exception in the host page.
 *
 * Live updates: the widget loads the conversation's messages (which
 * answer the conversation's cursor, opaque), then follows the conversation's event stream
 * from that cursor with EventSource, which reconnects by itself and
 * resumes with Last-Event-ID. When a stream cannot be held it polls with
 * after_id and tries the stream again later. Every message it sends
 * carries a client_message_id, so a retry after a lost answer never
 * duplicates, and the copy that comes back replaces the pending one.
 */
(function () {
  "use strict";

  var VERSION = "1.0.0";
  // Polling is the fallback for when a stream cannot be held.
  var POLL_OPEN_MS = 3000;
  var POLL_IDLE_MS = 20000;
  var POLL_MAX_BACKOFF_MS = 60000;
  var STREAM_RETRY_MS = 5000;
  var STREAM_MAX_RETRY_MS = 60000;
  // A stream that has not opened by then (a proxy holding it) is given up.
  var STREAM_OPEN_MS = 10000;
  // The messages answer at most this many at a time.
  var PAGE = 100;
  // The events a host page may listen to with Parley('on', name, fn).
  var EVENTS = ["ready", "open", "close", "message", "unread"];
  // The server passes on one typing indicator per sender every 2 seconds.
  var TYPING_EVERY_MS = 2000;
  // The most files one message carries, as the server counts them.
  var MAX_FILES = 10;
  // Thumbnails are shown at most this wide and high.
  var THUMB_BOX = 220;


  function warn(message, detail) {
    try { console.warn("[parley] " + message, detail === undefined ? "" : detail); } catch (e) { /* no console */ }
  }

  function findScript() {
    var current = document.currentScript;
    if (current && current.getAttribute("data-installation-token")) return current;
    var all = document.querySelectorAll("script[data-installation-token]");
    for (var i = all.length - 1; i >= 0; i--) {
      if (!all[i].__parleyStarted) return all[i];
    }
    return null;
  }

  /** The page's address without its fragment: a fragment can carry what
   * the page keeps to itself (sign-in tokens of single-page apps), and the
   * server has no use for it. */
  function pageUrl() {
    return location.href.split("#")[0].slice(0, 2048);
  }

  function storage() {
    try { var s = window.localStorage; s.getItem("parley"); return s; } catch (e) { return null; }
  }

  /** Whom an identity names: its user id, or its token's subject. */
  function subject(identity) {
    if (!identity) return null;
    if (identity.user_id) return identity.user_id;
    try {
      var part = identity.jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(atob(part + "===".slice((part.length + 3) % 4))).sub || null;
    } catch (e) { return null; }
  }

  function newUuid() {
    if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID();
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  /** A fetch of the Parley API that resolves to {status, body}, never throws on HTTP errors. */
  function api(base, method, path, body) {
    var init = { method: method, headers: { accept: "application/json" }, credentials: "omit" };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(base + path, init).then(function (res) {
      return res.text().then(function (text) {
        var parsed = null;
        try { parsed = text ? JSON.parse(text) : null; } catch (e) { parsed = null; }
        return { status: res.status, body: parsed };
      });
    });
  }

  var CSS = [
    ":host{all:initial}",
    "[hidden]{display:none!important}",
    "*{box-sizing:border-box;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}",
    ".launcher{position:fixed;right:16px;bottom:16px;width:56px;height:56px;border-radius:50%;border:0;background:var(--accent);color:#fff;",
    "cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483646;display:flex;align-items:center;justify-content:center}",
    ".launcher svg{width:26px;height:26px;fill:currentColor}",
    ".launcher:focus-visible,button:focus-visible,textarea:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #111;outline-offset:2px}",
    // --vw, --vh, --vr and --vb are the visual viewport's size and its
    // distance from the layout viewport's right and bottom edges (see
    // `fit`): a page wider than the phone's screen widens the layout
    // viewport, and the panel must fit what the visitor sees.
    ".panel{position:fixed;right:calc(var(--vr,0px) + 16px);bottom:calc(var(--vb,0px) + 84px);",
    "width:min(380px,calc(var(--vw,100vw) - 16px));height:min(560px,calc(var(--vh,100vh) - 100px));",
    "background:#fff;color:#1f2937;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.28);display:flex;flex-direction:column;",
    "overflow:hidden;z-index:2147483647;font-size:15px;line-height:1.4}",
    // On a short screen the forms give way (and scroll) before the
    // header, the messages and the message field do.
    ".head,.compose{flex-shrink:0}",
    ".consent,.verify,.transcript,.greeting{flex-shrink:1;min-height:0;overflow-y:auto}",
    ".panel[hidden]{display:none}",
    ".narrow .panel{right:calc(var(--vr,0px) + 8px);width:calc(var(--vw,100vw) - 16px);bottom:calc(var(--vb,0px) + 80px);height:calc(var(--vh,100vh) - 96px)}",
    ".launcher,.preview{margin-right:var(--vr,0px);margin-bottom:var(--vb,0px)}",
    ".head{background:var(--accent);color:#fff;padding:12px 14px;display:flex;align-items:center;gap:8px}",
    ".head h2{font-size:16px;margin:0;flex:1;font-weight:600}",
    ".head button{background:transparent;border:0;color:#fff;font-size:20px;line-height:1;cursor:pointer;padding:4px 8px;border-radius:6px}",
    ".greeting{padding:10px 14px;background:#f3f4f6;font-size:14px;margin:0}",
    ".away{padding:10px 14px;background:#fef3c7;color:#78350f;font-size:14px;margin:0}",
    ".log{flex:1 1 0;min-height:48px;overflow-y:auto;padding:12px 14px;display:flex;flex-direction:column;gap:8px;margin:0;list-style:none}",
    ".msg{max-width:85%;padding:8px 11px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere}",
    ".msg.visitor{align-self:flex-end;background:var(--accent);color:#fff;border-bottom-right-radius:4px}",
    ".msg.operator{align-self:flex-start;background:#eef0f3;border-bottom-left-radius:4px}",
    ".msg.system{align-self:center;background:transparent;color:#6b7280;font-size:13px;text-align:center}",
    ".who{display:block;font-size:12px;opacity:.75;margin-bottom:2px}",
    ".typing{margin:0;padding:0 14px 6px;font-size:13px;color:#6b7280;font-style:italic}",
    ".time{display:block;font-size:11px;opacity:.7;margin-top:2px;text-align:end}",
    ".msg.pending{opacity:.6}",
    ".msg.failed{outline:2px solid #dc2626}",
    ".state{display:block;font-size:12px;margin-top:3px}",
    ".retry{margin-left:6px;font-size:12px;background:#fff;color:#b91c1c;border:1px solid #b91c1c;border-radius:6px;cursor:pointer;padding:1px 6px}",
    "form{margin:0}",
    ".consent{padding:12px 14px;border-top:1px solid #e5e7eb;display:flex;flex-direction:column;gap:8px;font-size:14px}",
    ".consent input[type=text],.consent input[type=email],.verify input,.verify select{width:100%;padding:8px;border:1px solid #d1d5db;border-radius:8px;font-size:14px}",
    ".consent label.check{display:flex;gap:8px;align-items:flex-start}",
    ".consent a{color:var(--accent)}",
    ".compose{display:flex;gap:8px;padding:10px;border-top:1px solid #e5e7eb}",
    ".compose textarea{flex:1;resize:none;height:44px;padding:10px;border:1px solid #d1d5db;border-radius:10px;font-size:15px}",
    ".primary{background:var(--accent);color:#fff;border:0;border-radius:10px;padding:0 14px;font-size:14px;cursor:pointer;min-height:40px}",
    ".primary[disabled]{opacity:.5;cursor:default}",
    ".verify{padding:10px 14px;border-top:1px solid #e5e7eb;display:flex;flex-direction:column;gap:8px;font-size:14px}",
    ".verify .row{display:flex;gap:8px}",
    ".link{background:none;border:0;color:var(--accent);cursor:pointer;padding:0;font-size:14px;text-decoration:underline;align-self:flex-start}",
    ".notice{font-size:13px;color:#6b7280;margin:0}",
    ".error{font-size:13px;color:#b91c1c;margin:0}",
    ".verified{color:#047857;font-weight:600;margin:0}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}",
    ".badge{position:absolute;top:-4px;right:-4px;min-width:20px;height:20px;padding:0 5px;border-radius:10px;background:#dc2626;color:#fff;",
    "font-size:12px;font-weight:700;line-height:20px;text-align:center}",
    ".preview{position:fixed;right:16px;bottom:84px;max-width:min(280px,calc(100vw - 32px));padding:10px 12px;border-radius:12px;",
    "background:#fff;color:#1f2937;box-shadow:0 6px 24px rgba(0,0,0,.22);font-size:14px;line-height:1.35;cursor:pointer;z-index:2147483646;",
    "border:0;text-align:left;white-space:pre-wrap;overflow-wrap:anywhere}",
    ".preview .who{font-weight:600}",
    ".transcript{padding:6px 14px 10px;display:flex;flex-direction:column;gap:4px}",
    ".attach{flex-shrink:0;width:40px;min-height:40px;border:1px solid #d1d5db;border-radius:10px;background:#fff;cursor:pointer;font-size:18px}",
    ".attach[hidden]{display:none}",
    ".tray{list-style:none;margin:0;padding:6px 10px 0;display:flex;flex-wrap:wrap;gap:6px;flex-shrink:0;max-height:35%;overflow-y:auto}",
    ".tray[hidden]{display:none}",
    ".tray li{display:flex;align-items:center;gap:6px;max-width:100%;padding:4px 6px;border:1px solid #e5e7eb;border-radius:8px;font-size:13px}",
    ".tray img{width:36px;height:36px;object-fit:cover;border-radius:4px}",
    ".tray .name{max-width:150px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}",
    ".tray progress{width:60px}",
    ".tray .failed{border-color:#dc2626}",
    ".tray button{border:0;background:none;cursor:pointer;font-size:16px;line-height:1;padding:0 2px}",
    ".panel.dropping{outline:3px dashed var(--accent);outline-offset:-6px}",
    ".msg a.file{display:block;margin-top:4px;color:inherit;text-decoration:underline}",
    ".msg a.file img{display:block;max-width:100%;height:auto;border-radius:8px;background:#e5e7eb}"
  ].join("");

  function parse(text) {
    try { return JSON.parse(text); } catch (e) { return null; }
  }

  /** A file's size for people. */
  function size(bytes) {
    var n = Number(bytes) || 0;
    if (n >= 1048576) return (n / 1048576).toFixed(1) + " MB";
    if (n >= 1024) return Math.round(n / 1024) + " KB";
    return n + " B";
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") node.textContent = attrs[k];
        else if (k === "hidden") node.hidden = !!attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function Widget(script) {
    this.base = (script.getAttribute("data-api-base") || "").replace(/\/+$/, "");
    this.token = script.getAttribute("data-installation-token") || "";
    this.store = storage();
    this.key = "parley:" + this.token + ":";
    // Maps without a prototype: keys come from the server (a
    // client_message_id may be "__proto__"), never from Object.prototype.
    this.messages = Object.create(null);  // id -> element
    // The newest message id a poll has returned: polls read by id, which
    // follows each conversation's commit order. The stream's order is the
    // feed's, which on PostgreSQL may differ, so what the stream brings
    // never moves it (a poll after a stream could otherwise skip).
    this.lastId = 0;
    this.conversation = this.read("conversation");
    this.open = false;
    this.failures = 0;
    this.timer = null;
    this.pending = Object.create(null);   // client_message_id -> pending element
    this.cursor = null;        // the conversation's cursor the stream resumes from
    this.source = null;        // the EventSource while a stream is held
    this.streamFailures = 0;
    this.streamRetryAt = 0;
    this.lastReset = 0;
    // Operator messages shown while the panel was closed or the page
    // hidden: id -> message. Reading them posts a read marker.
    this.unread = Object.create(null);
    // The page's own title, when the host page lets the widget count
    // unread messages in it (data-unread-title="true").
    this.titleCount = script.getAttribute("data-unread-title") === "true";
    this.pageTitle = null;
    // The host page's listeners, by event name.
    this.listeners = Object.create(null);
    EVENTS.forEach(function (name) { this.listeners[name] = []; }, this);
    // Commands given before the widget was ready, run once it is.
    this.waiting = [];
    this.ready = false;
    this.unreadCount = 0;
    // What the host page told about its signed-in user, sent with every
    // synchronisation until `logout`.
    this.identity = null;
    // Moved on when the conversation shown is dropped: an answer that
    // comes back after that is about something else and is ignored.
    this.generation = 0;
  }

  /** Runs one command of the page's `Parley(...)` API. Before the widget
   * is ready (its configuration loaded) commands wait, in order; a
   * listener is registered at once, and `ready` fires for a late one. */
  Widget.prototype.command = function (name, arg, fn) {
    if (name === "on") {
      if (EVENTS.indexOf(arg) < 0 || typeof fn !== "function") { warn("Parley('on') takes one of " + EVENTS.join(", ") + " and a function"); return; }
      this.listeners[arg].push(fn);
      if (arg === "ready" && this.ready) this.call(fn, {});
      return;
    }
    if (!this.ready) { this.waiting.push([name, arg]); return; }
    switch (name) {
      case "open": this.toggle(true); break;
      case "close": this.toggle(false); break;
      case "toggle": this.toggle(); break;
      case "show": this.pageHidden = false; this.showLauncher(); break;
      case "hide": this.pageHidden = true; this.showLauncher(); break;
      case "identify": {
        var before = this.identity;
        if (!this.takeIdentity(arg)) break;
        // Another user at this browser: nothing of the previous one stays.
        if (before && subject(before) !== subject(this.identity)) this.switchUser();
        this.identify();
        break;
      }
      case "set": this.setAttributes(arg); break;
      case "logout": this.logout(); break;
      default: warn("unknown command", String(name));
    }
  };

  /** The launcher shows unless the page hid it, or the installation
   * takes identified visitors only and the page has not identified one. */
  Widget.prototype.showLauncher = function () {
    var waiting = this.requiresIdentity && !this.identified;
    this.launcher.hidden = !!this.pageHidden || waiting;
    if (waiting && this.open) this.toggle(false);
    this.showUnread();
  };

  Widget.prototype.call = function (fn, data) {
    try { fn(data); } catch (e) { warn("a listener failed", e && e.message); }
  };

  Widget.prototype.emit = function (name, data) {
    var self = this;
    this.listeners[name].slice().forEach(function (fn) { self.call(fn, data); });
  };

  /** One of the widget's own words in the visitor's language (the
   * configuration brings them: see locales/ in parley-domain), with
   * `{name}` places filled from `args`. */
  Widget.prototype.t = function (key, args) {
    var words = this.config && this.config.strings;
    var text = (words && typeof words[key] === "string" && words[key]) || key;
    return text.replace(/\{(\w+)\}/g, function (all, name) { return args && args[name] !== undefined ? String(args[name]) : all; });
  };

  Widget.prototype.read = function (name) {
    return this.store ? this.store.getItem(this.key + name) : null;
  };
  Widget.prototype.write = function (name, value) {
    if (!this.store) return;
    if (value === null) this.store.removeItem(this.key + name); else this.store.setItem(this.key + name, value);
  };

  Widget.prototype.start = function () {
    var self = this;
    if (!this.base || !this.token) { warn("the script needs data-api-base and data-installation-token"); return; }
    var languages = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"]).join(",");
    api(this.base, "GET", "/api/v1/widget/config/" + encodeURIComponent(this.token) + "?lang=" + encodeURIComponent(languages.slice(0, 500))).then(function (res) {
      if (res.status !== 200 || !res.body) {
        warn("the widget could not load its configuration (HTTP " + res.status + ")", res.body && res.body.error);
        return;
      }
      self.config = res.body;
      if (res.body.installation && res.body.installation.status === "disabled") { warn("this installation is disabled"); return; }
      self.render();
      self.heartbeat();
      self.visitor = self.read("visitor") || newUuid();
      self.write("visitor", self.visitor);
      self.ready = true;
      self.requiresIdentity = !!(res.body.installation && res.body.installation.identity_required);
      // Commands given before now run in their order; `identify`, `set`
      // and `logout` only change what the first synchronisation sends,
      // instead of each making one of their own.
      var waiting = self.waiting;
      self.waiting = [];
      waiting.forEach(function (c) {
        if (c[0] === "identify") self.takeIdentity(c[1]);
        else if (c[0] === "set") self.attributes = self.attributesOf(c[1]) || self.attributes;
        else if (c[0] === "logout") self.logout(true);
        else self.command(c[0], c[1]);
      });
      // The browser's visitor was a signed-in user's, and the page does
      // not say who is signed in now: that user's conversation is not
      // shown, not even for a moment.
      if (!self.identity && self.read("identified")) self.logout(true);
      self.showLauncher();
      if (self.identity) self.identify();
      else if (self.requiresIdentity) warn("this installation takes identified visitors only: the page must call Parley('identify', ...)");
      else {
        var generation = self.generation;
        self.sync({}).then(function (r) { if (generation === self.generation) self.adopt(r); })
          .catch(function () { /* retried with the first message */ });
        if (self.conversation) { self.showChat(); self.poll(); }
      }
      self.emit("ready", {});
    }).catch(function (e) { warn("the chat service cannot be reached", e && e.message); });
  };

  Widget.prototype.heartbeat = function () {
    api(this.base, "POST", "/api/v1/widget/ping", {
      token: this.token, current_url: pageUrl(), installation_type: "web", version: VERSION
    }).catch(function () { /* a missed heartbeat is not the visitor's problem */ });
  };

  Widget.prototype.sync = function (extra) {
    var body = { token: this.token, uuid: this.visitor, current_url: pageUrl() };
    if (this.config && this.config.locale) body.locale = this.config.locale;
    var identity = this.identity;
    if (identity) Object.keys(identity).forEach(function (k) { body[k] = identity[k]; });
    if (this.attributes) body.attributes = this.attributes;
    Object.keys(extra).forEach(function (k) { if (extra[k]) body[k] = extra[k]; });
    return api(this.base, "POST", "/api/v1/widget/visitors", body);
  };

  /** The fields of an `identify` call the server takes, or null (with a
   * warning) when the call cannot identify anyone. */
  Widget.prototype.identityOf = function (arg) {
    if (!arg || typeof arg !== "object" || (typeof arg.user_id !== "string" && typeof arg.jwt !== "string") ||
        (typeof arg.user_hash !== "string" && typeof arg.jwt !== "string")) {
      warn("Parley('identify') takes {user_id, user_hash} or {jwt}");
      return null;
    }
    var out = {};
    ["user_id", "user_hash", "jwt", "name", "email", "phone"].forEach(function (k) { if (typeof arg[k] === "string" && arg[k]) out[k] = arg[k]; });
    var attributes = this.attributesOf(arg);
    if (attributes) out.attributes = attributes;
    return out;
  };

  Widget.prototype.attributesOf = function (arg) {
    return arg && typeof arg.attributes === "object" && arg.attributes && !Array.isArray(arg.attributes) ? arg.attributes : null;
  };

  /** Keeps what an `identify` call gives (its attributes go with every
   * synchronisation); false when it cannot identify anyone. */
  Widget.prototype.takeIdentity = function (arg) {
    var identity = this.identityOf(arg);
    if (!identity) return false;
    if (identity.attributes) { this.attributes = identity.attributes; delete identity.attributes; }
    this.identity = identity;
    return true;
  };

  /** Tells the server who the page's signed-in user is. The server
   * answers with that user's visitor, the same in every browser, and its
   * latest conversation, which this widget then shows. A refusal leaves
   * nobody identified: whatever the previous user had is dropped. */
  Widget.prototype.identify = function (retried) {
    var self = this;
    var generation = this.generation;
    // Only the latest identify's answer counts.
    var call = this.identifying = (this.identifying || 0) + 1;
    this.sync({}).then(function (res) {
      if (generation !== self.generation || call !== self.identifying) return;
      var error = res.body && res.body.error;
      // Attributes the server refused are dropped, and the rest sent again.
      if (res.status === 422 && error && error.fields && error.fields.attributes && !retried) {
        warn("the attributes were refused", error.fields.attributes.join(" "));
        self.attributes = null;
        self.identify(true);
        return;
      }
      if (res.status !== 200 && res.status !== 201) {
        warn("the visitor could not be identified", error && error.code);
        var was = self.identified;
        self.identity = null;
        if (was) self.logout(); else { self.identified = false; self.showLauncher(); }
        return;
      }
      self.identified = true;
      self.write("identified", "1");
      self.showLauncher();
      self.adopt(res);
      var conversation = res.body && res.body.conversation && res.body.conversation.public_id;
      if (conversation && conversation !== self.conversation) {
        self.forget();
        self.conversation = conversation;
        self.write("conversation", conversation);
      }
      if (self.conversation) { self.showChat(); self.poll(); }
    }).catch(function (e) { warn("the visitor could not be identified", e && e.message); });
  };

  /** A new visitor for another user at this browser: the conversation
   * shown and the visitor go, the new identity stays. */
  Widget.prototype.switchUser = function () {
    this.forget();
    this.identified = false;
    this.write("identified", null);
    this.visitor = newUuid();
    this.write("visitor", this.visitor);
  };

  /** The visitor the server answered for: a stored uuid that is not this
   * browser's to use (an identified user's, without its signature) comes
   * back as a new one, whose conversations this widget does not show. */
  Widget.prototype.adopt = function (res) {
    var visitor = res && (res.status === 200 || res.status === 201) && res.body && res.body.visitor;
    if (!visitor || !visitor.uuid || visitor.uuid === this.visitor) return;
    if (this.conversation) this.forget();
    this.visitor = visitor.uuid;
    this.write("visitor", this.visitor);
  };

  Widget.prototype.setAttributes = function (arg) {
    var attributes = this.attributesOf(arg);
    if (!attributes) { warn("Parley('set') takes {attributes: {...}}"); return; }
    var self = this;
    var previous = this.attributes;
    this.attributes = attributes;
    this.sync({}).then(function (res) {
      if (res.status === 200 || res.status === 201) return;
      warn("the attributes were not saved", res.body && res.body.error && res.body.error.code);
      // Not sent again with every synchronisation to be refused again.
      if (self.attributes === attributes) self.attributes = previous;
    }).catch(function () { /* sent again with the next synchronisation */ });
  };

  /** Drops the conversation shown (not the visitor): its messages, its
   * stream and what is unread in it. */
  Widget.prototype.forget = function () {
    // Answers still on their way are about what is forgotten.
    this.generation += 1;
    this.openedHere = false;
    this.opening = null;
    this.closeStream();
    clearTimeout(this.timer);
    clearTimeout(this.typingTimer);
    this.typingNote.hidden = true;
    this.typedAt = 0;
    // Nothing the previous visitor typed or was told stays on screen.
    [this.nameInput, this.emailInput, this.input].forEach(function (field) { field.value = ""; });
    this.consentBox.checked = false;
    this.consentError.hidden = true;
    this.challenge = null;
    Array.prototype.forEach.call(this.panel.querySelectorAll("p.notice[role=status], p.error[role=status]"), function (p) { p.textContent = ""; });
    this.conversation = null;
    this.write("conversation", null);
    this.messages = Object.create(null);
    this.pending = Object.create(null);
    this.unread = Object.create(null);
    this.lastId = 0;
    this.cursor = null;
    this.log.textContent = "";
    this.consent.hidden = false;
    // Files on their way belong to the conversation forgotten.
    this.uploads.slice().forEach(function (u) { this.dropUpload(u); }, this);
    this.attach.hidden = true;
    if (this.transcript) this.transcript.hidden = true;
    this.verify.hidden = true;
    this.setVerified(false);
    this.showUnread();
  };

  /** The page's user signed out: this browser forgets its visitor, so
   * the next person at it starts anew. */
  Widget.prototype.logout = function (quiet) {
    this.identifying = (this.identifying || 0) + 1;
    this.write("identified", null);
    this.forget();
    this.identity = null;
    this.identified = false;
    this.attributes = null;
    this.visitor = newUuid();
    this.write("visitor", this.visitor);
    this.showLauncher();
    if (!quiet && !this.requiresIdentity) this.sync({}).catch(function () { /* retried with the first message */ });
  };

  Widget.prototype.render = function () {
    var self = this;
    var cfg = this.config;
    var look = (cfg.site && cfg.site.widget) || {};
    var title = look.title || (cfg.site && cfg.site.name) || this.t("chat");
    // Several widgets on one page sit side by side instead of on top of each other.
    var index = document.querySelectorAll("[data-parley=widget]").length;
    var host = el("div", { id: index ? "parley-widget-" + (index + 1) : "parley-widget", "data-parley": "widget" });
    document.body.appendChild(host);
    var root = host.attachShadow({ mode: "open" });
    var accent = /^#[0-9a-fA-F]{6}$/.test(look.accent_color || "") ? look.accent_color : "#2563eb";
    var offset = ".launcher{right:" + (16 + index * 72) + "px}";
    root.appendChild(el("style", { text: ":host{--accent:" + accent + "}" + CSS + (index ? offset : "") }));

    this.launcher = el("button", { "class": "launcher", type: "button", "aria-label": this.t("open"), "aria-expanded": "false", "aria-controls": "parley-panel" });
    this.launcher.innerHTML = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>';
    this.launcher.addEventListener("click", function () { self.toggle(); });
    this.badge = el("span", { "class": "badge", hidden: true, "aria-hidden": "true" });
    this.launcher.appendChild(this.badge);
    this.preview = el("button", { "class": "preview", type: "button", hidden: true });
    this.preview.addEventListener("click", function () { self.toggle(true); });

    var close = el("button", { type: "button", "aria-label": this.t("close"), text: "\u00d7" });
    close.addEventListener("click", function () { self.toggle(false); });
    this.log = el("ol", { "class": "log", role: "log", "aria-live": "polite", "aria-label": this.t("messages") });
    this.typingNote = el("p", { "class": "typing", "aria-live": "polite", hidden: true });
    this.panel = el("section", { "class": "panel", id: "parley-panel", role: "dialog", "aria-label": title, hidden: true }, [
      // What the site and the people write may be in another script
      // than the widget's language: each finds its own direction.
      el("div", { "class": "head" }, [el("h2", { text: title, dir: "auto" }), close]),
      look.greeting ? el("p", { "class": "greeting", text: look.greeting, dir: "auto" }) : null,
      this.awayNotice(),
      this.log,
      this.typingNote
    ]);
    this.panel.addEventListener("keydown", function (e) { if (e.key === "Escape") { self.toggle(false); self.launcher.focus(); } });

    this.buildConsent(look);
    this.buildComposer();
    this.buildVerification();
    this.buildTranscript();
    this.frame = el("div", { dir: cfg.direction === "rtl" ? "rtl" : "ltr", lang: cfg.locale || "en" }, [this.panel, this.preview, this.launcher]);
    root.appendChild(this.frame);
    this.root = root;
    this.host = host;
    this.fit();
    // Scrolling fires often: one fit per frame.
    var frame = 0;
    var fit = function () {
      if (frame) return;
      frame = window.requestAnimationFrame(function () { frame = 0; self.fit(); });
    };
    if (window.visualViewport) {
      window.visualViewport.addEventListener("resize", fit);
      window.visualViewport.addEventListener("scroll", fit);
    }
    window.addEventListener("resize", fit);
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden) { self.wake(); self.markRead(); } else self.schedule();
    });
    window.addEventListener("online", function () { self.wake(); });
  };

  /** Outside the site's business hours: when the team is back, and
   * that an email address is needed to answer. */
  Widget.prototype.awayNotice = function () {
    var cfg = this.config;
    if (cfg.online !== false) return null;
    var back = cfg.next_open_at ? new Date(cfg.next_open_at) : null;
    var when = back && !isNaN(back.getTime()) ? this.day(back) : null;
    var text = this.t("away") + (when ? " " + this.t("back_at", { when: when }) : "") + " " + this.t("away_email");
    var notice = el("p", { "class": "away", role: "status", text: text });
    // A page left open until the team is back: the notice goes then, and
    // an email is no longer asked for.
    var wait = back ? back.getTime() - Date.now() : -1;
    if (wait > 0 && wait < 86400000) {
      var self = this;
      setTimeout(function () {
        cfg.online = true;
        notice.remove();
        self.emailInput.setAttribute("placeholder", self.t("email"));
        self.emailInput.setAttribute("aria-label", self.t("email"));
      }, wait);
    }
    return notice;
  };

  /** A day and time in the visitor's language: "Monday 09:00". */
  Widget.prototype.day = function (date) {
    try {
      return new Intl.DateTimeFormat(this.locale(), { weekday: "long", hour: "numeric", minute: "2-digit" }).format(date);
    } catch (e) { return date.toLocaleString(); }
  };

  Widget.prototype.buildConsent = function (look) {
    var self = this;
    this.nameInput = el("input", { type: "text", autocomplete: "name", "aria-label": this.t("name"), placeholder: this.t("name"), maxlength: "255" });
    // Outside the business hours the address is asked for, not optional.
    var email = this.config.online === false ? this.t("email_required") : this.t("email");
    this.emailInput = el("input", { type: "email", autocomplete: "email", "aria-label": email, placeholder: email });
    this.consentBox = el("input", { type: "checkbox", id: "parley-consent", required: "required" });
    var policy = el("span", { text: (look.privacy_text || this.t("consent")) + " " });
    if (look.privacy_url && /^https?:\/\//.test(look.privacy_url)) {
      policy.appendChild(el("a", { href: look.privacy_url, target: "_blank", rel: "noopener noreferrer", text: this.t("privacy") }));
    }
    this.consentError = el("p", { "class": "error", role: "alert", hidden: true });
    // What giving an address means, said where it is given.
    var emailUse = el("p", { "class": "notice", text: this.t("email_use") });
    this.consent = el("div", { "class": "consent" }, [
      this.nameInput, this.emailInput, emailUse,
      el("label", { "class": "check", "for": "parley-consent" }, [this.consentBox, policy]),
      this.consentError
    ]);
    this.panel.appendChild(this.consent);
  };

  Widget.prototype.buildComposer = function () {
    var self = this;
    this.input = el("textarea", { "aria-label": this.t("write"), placeholder: this.t("write_hint"), maxlength: "5000", rows: "1" });
    this.send = el("button", { "class": "primary", type: "submit", text: this.t("send"), "aria-label": this.t("send_label") });
    // Files go into the conversation once it exists: the button shows
    // then (`showChat`), and dropping or pasting a file does nothing before.
    this.fileInput = el("input", { type: "file", multiple: "multiple", hidden: "hidden", tabindex: "-1", "aria-hidden": "true" });
    this.attach = el("button", { "class": "attach", type: "button", text: "\ud83d\udcce", title: this.t("attach"), "aria-label": this.t("attach"), hidden: "hidden" });
    this.tray = el("ul", { "class": "tray", "aria-label": this.t("attach"), hidden: "hidden" });
    this.uploads = [];
    this.attach.addEventListener("click", function () { self.fileInput.click(); });
    this.fileInput.addEventListener("change", function () { self.addFiles(self.fileInput.files); self.fileInput.value = ""; });
    this.input.addEventListener("paste", function (e) {
      var files = e.clipboardData && e.clipboardData.files;
      if (self.conversation && files && files.length) { e.preventDefault(); self.addFiles(files); }
    });
    var carriesFiles = function (e) { return e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types || [], "Files") >= 0; };
    this.panel.addEventListener("dragover", function (e) {
      if (!self.conversation || !carriesFiles(e)) return;
      e.preventDefault();
      self.panel.classList.add("dropping");
    });
    this.panel.addEventListener("dragleave", function (e) { if (e.target === self.panel) self.panel.classList.remove("dropping"); });
    this.panel.addEventListener("drop", function (e) {
      self.panel.classList.remove("dropping");
      if (!self.conversation || !carriesFiles(e)) return;
      e.preventDefault();
      self.addFiles(e.dataTransfer.files);
    });
    var form = el("form", { "class": "compose" }, [this.attach, this.fileInput, this.input, this.send]);
    form.addEventListener("submit", function (e) { e.preventDefault(); self.submit(); });
    this.input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); self.submit(); }
    });
    this.input.addEventListener("input", function () { self.typing(); });
    this.panel.appendChild(this.tray);
    this.panel.appendChild(form);
  };

  /** Uploads the files chosen, dropped or pasted, up to what a message carries. */
  Widget.prototype.addFiles = function (files) {
    var self = this;
    Array.prototype.slice.call(files || [], 0, Math.max(0, MAX_FILES - this.uploads.length)).forEach(function (f) { self.upload(f); });
  };

  /** Uploads one file at once, with its progress and, for a picture, a
   * preview; it goes with the next message sent. */
  Widget.prototype.upload = function (file) {
    var self = this;
    var entry = { id: null, done: false, failed: false, preview: null };
    var item = el("li", { "class": "file" });
    if (/^image\/(png|jpeg|gif|webp)$/.test(file.type) && window.URL && URL.createObjectURL) {
      entry.preview = URL.createObjectURL(file);
      item.appendChild(el("img", { src: entry.preview, alt: "" }));
    }
    item.appendChild(el("span", { "class": "name", text: file.name || "file", dir: "auto", title: file.name || "" }));
    var bar = el("progress", { max: "100", value: "0", "aria-label": this.t("uploading") });
    item.appendChild(bar);
    var remove = el("button", { type: "button", text: "\u00d7", "aria-label": this.t("remove") + " " + (file.name || "") });
    remove.addEventListener("click", function () { self.dropUpload(entry); });
    item.appendChild(remove);
    entry.item = item;
    this.uploads.push(entry);
    this.tray.appendChild(item);
    this.tray.hidden = false;
    var failed = function (why) {
      entry.failed = true;
      item.className = "file failed";
      bar.replaceWith(el("span", { "class": "state", role: "alert", text: why }));
      self.updateSend();
    };
    var form = new FormData();
    form.append("file", file, file.name || "file");
    var xhr = new XMLHttpRequest();
    entry.xhr = xhr;
    xhr.open("POST", this.base + "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/attachments?token=" + encodeURIComponent(this.token));
    xhr.upload.onprogress = function (e) { if (e.lengthComputable) bar.value = Math.round(e.loaded / e.total * 100); };
    xhr.onload = function () {
      var body = parse(xhr.responseText);
      if (xhr.status === 201 && body && body.attachment) {
        entry.id = body.attachment.id;
        entry.done = true;
        bar.value = 100;
        item.className = "file ready";
        self.updateSend();
      } else {
        failed(self.problem({ status: xhr.status, body: body }, self.t("upload_failed")));
      }
    };
    xhr.onerror = function () { failed(self.t("unreachable")); };
    xhr.send(form);
    this.updateSend();
  };

  /** Takes a file out of the next message (an upload not sent is removed
   * by the server after a day). */
  Widget.prototype.dropUpload = function (entry) {
    if (entry.xhr && !entry.done && !entry.failed) entry.xhr.abort();
    if (entry.preview) URL.revokeObjectURL(entry.preview);
    if (entry.item) entry.item.remove();
    this.uploads = this.uploads.filter(function (u) { return u !== entry; });
    this.tray.hidden = this.uploads.length === 0;
    this.updateSend();
  };

  /** Sending waits while a file is still on its way. */
  Widget.prototype.updateSend = function () {
    this.send.disabled = this.uploads.some(function (u) { return !u.done && !u.failed; });
  };

  Widget.prototype.buildVerification = function () {
    var self = this;
    var methods = (this.config.installation && this.config.installation.verification_methods) || [];
    this.verify = el("div", { "class": "verify", hidden: true });
    if (!methods.length) return;
    var open = el("button", { "class": "link", type: "button", text: this.t("verify") });
    var select = el("select", { "aria-label": this.t("method") });
    methods.forEach(function (m) { select.appendChild(el("option", { value: m, text: self.t(m) })); });
    var target = el("input", { type: "text", "aria-label": this.t("target"), placeholder: this.t("target_hint") });
    var sendCode = el("button", { "class": "primary", type: "button", text: this.t("send") });
    var status = el("p", { "class": "notice", role: "status" });
    var code = el("input", { type: "text", inputmode: "numeric", autocomplete: "one-time-code", "aria-label": this.t("code"), placeholder: this.t("code_hint") });
    var confirm = el("button", { "class": "primary", type: "button", text: this.t("confirm") });
    var codeRow = el("div", { "class": "row", hidden: true }, [code, confirm]);
    var form = el("div", { hidden: true }, [select, el("div", { "class": "row" }, [target, sendCode])]);
    this.verifiedNote = el("p", { "class": "verified", hidden: true, text: this.t("verified") });
    this.verify.appendChild(open);
    this.verify.appendChild(form);
    this.verify.appendChild(codeRow);
    this.verify.appendChild(status);
    this.verify.appendChild(this.verifiedNote);
    this.panel.appendChild(this.verify);

    open.addEventListener("click", function () { form.hidden = !form.hidden; if (!form.hidden) select.focus(); });
    sendCode.addEventListener("click", function () {
      if (!self.conversation) return;
      sendCode.disabled = true;
      status.className = "notice";
      status.textContent = self.t("sending");
      var body = { token: self.token, method: select.value };
      if (target.value.trim()) body.target = target.value.trim();
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/verification/start", body)
        .then(function (res) {
          sendCode.disabled = false;
          if (res.status !== 202) { status.className = "error"; status.textContent = self.problem(res, self.t("code_failed")); return; }
          self.challenge = res.body.challenge;
          if (select.value === "magic_link") {
            status.textContent = self.t("link_sent", { target: res.body.challenge.target_hint });
            codeRow.hidden = true;
          } else {
            status.textContent = self.t("code_sent", { target: res.body.challenge.target_hint });
            codeRow.hidden = false;
            code.focus();
          }
        })
        .catch(function () { sendCode.disabled = false; status.className = "error"; status.textContent = self.t("unreachable"); });
    });
    confirm.addEventListener("click", function () {
      if (!self.challenge || !code.value.trim()) return;
      confirm.disabled = true;
      var body = { token: self.token, challenge_id: self.challenge.id, code: code.value.trim() };
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/verification/confirm", body)
        .then(function (res) {
          confirm.disabled = false;
          if (res.status !== 200) { status.className = "error"; status.textContent = self.problem(res, self.t("not_worked")); return; }
          form.hidden = true;
          codeRow.hidden = true;
          status.textContent = "";
          self.setVerified(true);
          if (!self.source) self.poll();
        })
        .catch(function () { confirm.disabled = false; status.className = "error"; status.textContent = self.t("unreachable"); });
    });
  };

  /** "Email me this conversation": a transcript to the visitor's address. */
  Widget.prototype.buildTranscript = function () {
    var self = this;
    var ask = el("button", { "class": "link", type: "button", text: this.t("transcript") });
    var status = el("p", { "class": "notice", role: "status" });
    this.transcript = el("div", { "class": "transcript", hidden: !this.conversation }, [ask, status]);
    this.panel.appendChild(this.transcript);
    ask.addEventListener("click", function () {
      ask.disabled = true;
      status.className = "notice";
      status.textContent = self.t("sending");
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/transcript", { token: self.token })
        .then(function (res) {
          ask.disabled = false;
          if (res.status === 202) { status.textContent = self.t("transcript_sent", { email: res.body.email }); return; }
          status.className = "error";
          status.textContent = res.status === 422 ? self.t("transcript_verify") : self.problem(res, self.t("transcript_failed"));
        })
        .catch(function () { ask.disabled = false; status.className = "error"; status.textContent = self.t("unreachable"); });
    });
  };

  Widget.prototype.problem = function (res, fallback) {
    var err = res.body && res.body.error;
    if (!err) return fallback;
    if (err.code === "invalid_code" || err.code === "challenge_expired" || err.code === "rate_limited") return this.t(err.code);
    if (err.fields) return Object.keys(err.fields).map(function (k) { return err.fields[k].join(" "); }).join(" ");
    return err.message || fallback;
  };

  Widget.prototype.setVerified = function (yes) {
    if (this.verifiedNote) this.verifiedNote.hidden = !yes;
  };

  /** Keeps the launcher and the panel inside what the visitor sees: the
   * visual viewport, which on a phone is smaller than the layout
   * viewport `position: fixed` refers to when the page is wider than
   * the screen or zoomed in. */
  Widget.prototype.fit = function () {
    var vv = window.visualViewport;
    // `position: fixed` places against the layout viewport, which a
    // page wider than the screen widens: innerWidth and innerHeight.
    var layoutWidth = window.innerWidth;
    var layoutHeight = window.innerHeight;
    var width = vv ? vv.width : layoutWidth;
    var height = vv ? vv.height : layoutHeight;
    var right = vv ? Math.max(0, layoutWidth - vv.offsetLeft - vv.width) : 0;
    var bottom = vv ? Math.max(0, layoutHeight - vv.offsetTop - vv.height) : 0;
    // A page without a mobile viewport is shown zoomed out: the widget
    // zooms back in, so that it has its normal size on the screen. (A
    // visitor who zooms in keeps the larger text.)
    var zoom = vv && vv.scale > 0 && vv.scale < 1 ? 1 / vv.scale : 1;
    var style = this.host.style;
    style.setProperty("--vw", Math.floor(width / zoom) + "px");
    style.setProperty("--vh", Math.floor(height / zoom) + "px");
    style.setProperty("--vr", Math.ceil(right / zoom) + "px");
    style.setProperty("--vb", Math.ceil(bottom / zoom) + "px");
    this.frame.style.zoom = zoom === 1 ? "" : String(zoom);
    this.frame.className = width / zoom <= 480 ? "narrow" : "";
  };

  Widget.prototype.toggle = function (force) {
    var was = this.open;
    this.open = force === undefined ? !this.open : force;
    this.panel.hidden = !this.open;
    this.launcher.setAttribute("aria-expanded", String(this.open));
    this.launcher.setAttribute("aria-label", this.open ? this.t("close") : this.t("open"));
    if (this.open) { this.input.focus(); this.scroll(); }
    this.markRead();
    this.schedule();
    if (was !== this.open) this.emit(this.open ? "open" : "close", {});
  };

  /** Whether the visitor can see the messages now. */
  Widget.prototype.seen = function () {
    return this.open && !document.hidden;
  };

  /** The launcher's count and preview, and the page title's count when
   * the page allows it, from the messages not read yet. */
  Widget.prototype.showUnread = function () {
    var ids = Object.keys(this.unread);
    var count = ids.length;
    this.badge.hidden = count === 0;
    this.badge.textContent = count > 99 ? "99+" : String(count);
    this.launcher.setAttribute("aria-label", this.open ? this.t("close") : count ? this.t("open_unread", { n: count }) : this.t("open"));
    var latest = count ? this.unread[ids.reduce(function (a, b) { return Number(a) > Number(b) ? a : b; })] : null;
    this.preview.hidden = !latest || this.open || this.launcher.hidden;
    if (latest) {
      // A message of files alone is shown by its files' names.
      var said = latest.body || (latest.attachments || []).map(function (a) { return "\ud83d\udcce " + a.name; }).join(", ");
      var text = said.length > 90 ? said.slice(0, 90) + "\u2026" : said;
      this.preview.textContent = "";
      if (latest.sender && latest.sender.name) this.preview.appendChild(el("span", { "class": "who", text: latest.sender.name }));
      this.preview.appendChild(document.createTextNode(text));
    }
    if (this.titleCount) {
      if (this.pageTitle === null) this.pageTitle = document.title;
      document.title = count ? "(" + count + ") " + this.pageTitle : this.pageTitle;
    }
    if (!count) this.pageTitle = null;
    if (count !== this.unreadCount) {
      this.unreadCount = count;
      this.emit("unread", { count: count });
    }
  };

  /** The panel shows the messages: the unread ones are read, up to the
   * newest shown. */
  Widget.prototype.markRead = function () {
    var ids = Object.keys(this.unread);
    if (!this.seen() || !ids.length || !this.conversation) return;
    var self = this;
    var newest = Object.keys(this.messages).reduce(function (a, b) { return Math.max(a, Number(b)); }, 0);
    var reading = this.unread;
    this.unread = Object.create(null);
    this.showUnread();
    // Not recorded: they stay unread (for the server too), and are read
    // again the next time the panel shows them.
    var keep = function () {
      Object.keys(reading).forEach(function (id) { self.unread[id] = reading[id]; });
      self.showUnread();
    };
    api(this.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/read", {
      token: this.token, message_id: newest
    }).then(function (res) { if (res.status !== 200) keep(); }).catch(keep);
  };

  /** Once a conversation exists: no consent form, verification available. */
  Widget.prototype.showChat = function () {
    this.consent.hidden = true;
    this.attach.hidden = false;
    if (this.transcript) this.transcript.hidden = false;
    if (this.verify.childNodes.length) this.verify.hidden = false;
  };

  Widget.prototype.scroll = function () {
    this.log.scrollTop = this.log.scrollHeight;
  };

  /** Adds or updates one message, rendered as text only. */
  Widget.prototype.show = function (m, node) {
    var kind = m.sender && m.sender.type;
    kind = kind === "visitor" || kind === "operator" || kind === "system" ? kind : "system";
    var item = node || el("li", {});
    item.className = "msg " + kind;
    item.textContent = "";
    if (kind === "operator" && m.sender.name) item.appendChild(el("span", { "class": "who", text: m.sender.name }));
    if (m.body) item.appendChild(el("span", { "class": "body", text: m.body, dir: "auto" }));
    var self = this;
    (m.attachments || []).forEach(function (a) { var link = self.file(a); if (link) item.appendChild(link); });
    var at = m.created_at && new Date(m.created_at);
    if (at && !isNaN(at.getTime())) item.appendChild(el("time", { "class": "time", datetime: m.created_at, text: this.when(at) }));
    if (m.id) {
      item.setAttribute("data-id", String(m.id));
      this.messages[m.id] = item;
    }
    if (!node) this.log.appendChild(item);
    this.scroll();
    return item;
  };

  /** A file a message carries: a picture as its thumbnail, anything else
   * as a link with its name and size. Both open the signed link. */
  Widget.prototype.file = function (a) {
    if (!a || !/^https?:\/\//.test(a.url || "")) return null;
    var link = el("a", { "class": "file", href: a.url, target: "_blank", rel: "noopener noreferrer" });
    if (a.thumbnail_url && /^https?:\/\//.test(a.thumbnail_url) && a.width && a.height) {
      var scale = Math.min(1, THUMB_BOX / a.width, THUMB_BOX / a.height);
      link.appendChild(el("img", { src: a.thumbnail_url, alt: a.name || "", width: String(Math.round(a.width * scale)),
        height: String(Math.round(a.height * scale)), loading: "lazy" }));
    } else {
      link.appendChild(el("span", { text: "\ud83d\udcc4 " + (a.name || "file") + " \u00b7 " + size(a.size), dir: "auto" }));
    }
    return link;
  };

  /** A message's time in the visitor's language: the time alone today,
   * with the day before. */
  Widget.prototype.when = function (date) {
    var today = new Date().toDateString() === date.toDateString();
    var options = today ? { hour: "numeric", minute: "2-digit" } : { day: "numeric", month: "short", hour: "numeric", minute: "2-digit" };
    try { return new Intl.DateTimeFormat(this.locale(), options).format(date); } catch (e) { return date.toLocaleString(); }
  };

  /** The language the widget speaks: the configuration's choice, else the browser's. */
  Widget.prototype.locale = function () {
    return (this.config && this.config.locale) || navigator.language || "en";
  };

  /** Shows messages not shown yet; one the visitor sent replaces its
   * pending copy, whichever way it came back first. Messages that were
   * not there when the conversation was loaded are told to the page's
   * `message` listeners. */
  Widget.prototype.receive = function (list, history) {
    var self = this;
    (list || []).forEach(function (m) {
      var mine = m.sender && m.sender.type === "visitor" && m.client_message_id;
      var waiting = mine && self.pending[m.client_message_id] instanceof Element ? self.pending[m.client_message_id] : null;
      if (waiting) delete self.pending[m.client_message_id];
      if (self.messages[m.id]) { if (waiting) waiting.remove(); return; }
      self.show(m, waiting || undefined);
      if (m.sender && m.sender.type === "operator" && !m.read_by_visitor_at) self.unread[m.id] = m;
      if (m.sender && m.sender.type === "operator") { clearTimeout(self.typingTimer); self.typingNote.hidden = true; }
      if (!history) {
        self.emit("message", {
          id: m.id, conversation: self.conversation, body: m.body, created_at: m.created_at,
          sender: { type: m.sender && m.sender.type, name: (m.sender && m.sender.name) || null },
          attachments: (m.attachments || []).map(function (a) {
            return { id: a.id, name: a.name, content_type: a.content_type, size: a.size, url: a.url };
          })
        });
      }
    });
    this.showUnread();
    this.markRead();
  };

  /** Tells the operators the visitor is writing: at most every 2
   * seconds, as the server passes them on. */
  Widget.prototype.typing = function () {
    var now = Date.now();
    if (!this.conversation || !this.input.value.trim() || now - (this.typedAt || 0) < TYPING_EVERY_MS) return;
    this.typedAt = now;
    api(this.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/typing", { token: this.token })
      .catch(function () { /* a hint, not worth a retry */ });
  };

  /** Shows that an operator is writing, until `ms` pass or a message comes. */
  Widget.prototype.showTyping = function (sender, ms) {
    var self = this;
    clearTimeout(this.typingTimer);
    this.typingNote.textContent = this.t("typing", { name: (sender && sender.name) || this.t("someone") });
    this.typingNote.hidden = false;
    this.typingTimer = setTimeout(function () { self.typingNote.hidden = true; }, Math.min(ms || 5000, 10000));
  };

  Widget.prototype.submit = function () {
    var text = this.input.value.trim();
    var files = (this.uploads || []).filter(function (u) { return u.done; });
    if (this.send.disabled || (!text && !files.length)) return;
    if (!this.conversation && this.config.online === false && !this.emailInput.value.trim()) {
      this.consentError.hidden = false;
      this.consentError.textContent = this.t("email_needed");
      this.emailInput.focus();
      return;
    }
    if (!this.conversation && !this.consentBox.checked) {
      this.consentError.hidden = false;
      this.consentError.textContent = this.t("accept");
      this.consentBox.focus();
      return;
    }
    this.consentError.hidden = true;
    this.input.value = "";
    var ids = files.map(function (u) { return u.id; });
    var names = files.map(function (u) { return u.item.querySelector(".name").textContent; });
    this.uploads.slice().forEach(function (u) { this.dropUpload(u); }, this);
    var pending = el("li", { "class": "msg visitor pending" });
    var shown = [text].concat(names.map(function (n) { return "\ud83d\udcce " + n; })).filter(Boolean).join("\n");
    pending.appendChild(el("span", { "class": "body", text: shown }));
    var state = el("span", { "class": "state", text: this.t("sending") });
    pending.appendChild(state);
    this.log.appendChild(pending);
    this.scroll();
    var clientId = newUuid();
    this.pending[clientId] = pending;
    this.deliver(text, pending, clientId, ids);
  };

  /** Sends one message; a retry sends the same client_message_id, so the
   * server recognises a message it already has. */
  Widget.prototype.deliver = function (text, pending, clientId, ids) {
    var self = this;
    // While the conversation is being opened, later messages wait for it,
    // so a quick second message cannot open a second conversation.
    if (!this.conversation && this.opening) {
      this.opening.then(function () { self.deliver(text, pending, clientId, ids); });
      return;
    }
    var opens = !this.conversation;
    var generation = this.generation;
    var request;
    if (this.conversation) {
      var message = { token: this.token, current_url: pageUrl(), client_message_id: clientId };
      if (text) message.body = text;
      if (ids && ids.length) message.attachment_ids = ids;
      request = api(this.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/messages", message);
    } else {
      request = this.sync({ name: this.nameInput.value.trim(), email: this.emailInput.value.trim() }).then(function (synced) {
        // A logout meanwhile: this message is no longer anyone's here.
        if (generation !== self.generation) return { status: 0, body: null };
        self.adopt(synced);
        var body = { token: self.token, visitor_uuid: self.visitor, message: text, privacy_accepted: true, current_url: pageUrl(),
          client_message_id: clientId };
        // An identified visitor opens conversations with its signature.
        var identity = self.identity || {};
        ["user_id", "user_hash", "jwt"].forEach(function (k) { if (identity[k]) body[k] = identity[k]; });
        return api(self.base, "POST", "/api/v1/widget/conversations", body);
      });
    }
    var settled = request.then(function (res) {
      // The conversation was dropped meanwhile (a logout): not this one's.
      if (generation !== self.generation) return;
      if (res.status === 201 && res.body) {
        if (res.body.conversation && !self.conversation) {
          self.openedHere = true;
          self.conversation = res.body.conversation.public_id;
          self.write("conversation", self.conversation);
          self.showChat();
        }
        var sent = res.body.message || (res.body.messages && res.body.messages[0]);
        // The stream may have brought it already and replaced the
        // pending copy; `receive` tells.
        if (sent) self.receive([sent]);
        // A new conversation has no stream yet: loading it starts one.
        if (opens || !self.source) self.poll();
      } else if (!opens && res.status === 404) {
        // The conversation is gone (erased): nothing of it stays, and the
        // words go back in the box, to open a new one when sent again.
        self.forget();
        if (text) self.input.value = text;
      } else {
        self.failed(text, pending, self.problem(res, self.t("not_sent")), clientId, ids);
      }
    }).catch(function () { self.failed(text, pending, self.t("not_sent_unreachable"), clientId, ids); });
    if (opens) {
      this.opening = settled.then(function () { self.opening = null; });
    }
  };

  Widget.prototype.failed = function (text, pending, why, clientId, ids) {
    var self = this;
    // The stream brought the message while its answer was lost: it was
    // sent, and is shown already.
    if (!this.pending[clientId]) return;
    pending.className = "msg visitor failed";
    var shown = pending.querySelector(".body");
    pending.textContent = "";
    pending.appendChild(el("span", { "class": "body", text: shown ? shown.textContent : text }));
    var state = el("span", { "class": "state", role: "alert", text: why });
    var retry = el("button", { "class": "retry", type: "button", text: this.t("retry"), "aria-label": this.t("retry_label") });
    retry.addEventListener("click", function () {
      pending.className = "msg visitor pending";
      state.textContent = self.t("sending");
      retry.remove();
      self.deliver(text, pending, clientId, ids);
    });
    state.appendChild(retry);
    pending.appendChild(state);
  };

  /** Fetches new messages now, then follows the stream from the cursor
   * they came with, or keeps polling at the right pace when it cannot. */
  Widget.prototype.poll = function () {
    var self = this;
    clearTimeout(this.timer);
    if (!this.conversation) return;
    var after = this.lastId;
    var generation = this.generation;
    var path = "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/messages?token=" +
      encodeURIComponent(this.token) + (after ? "&after_id=" + after : "");
    api(this.base, "GET", path).then(function (res) {
      if (generation !== self.generation) return;
      if (res.status === 404) {
        // The conversation is gone (erased, another site, or the data was
        // reset): nothing of it stays on screen, and the next message
        // starts a new one. What the visitor is typing stays.
        var typed = self.input.value;
        self.forget();
        self.input.value = typed;
        return;
      }
      if (res.status !== 200 || !res.body) throw new Error("HTTP " + res.status);
      self.failures = 0;
      self.update(res.body.conversation);
      // What a conversation already held when this page came to it is
      // history, not news for the page's `message` listeners.
      self.receive(res.body.messages, !after && !self.openedHere);
      (res.body.messages || []).forEach(function (m) { if (m.id > self.lastId) self.lastId = m.id; });
      // A full page after `after_id` may not be all: its cursor is the
      // conversation's latest, so read on before following from it.
      if (after && (res.body.messages || []).length >= PAGE) { self.poll(); return; }
      if (res.body.cursor && !self.source) self.cursor = res.body.cursor;
      self.follow();
    }).catch(function (e) {
      if (generation !== self.generation) return;
      self.failures += 1;
      if (self.failures === 1) warn("could not fetch messages", e && e.message);
      self.schedule();
    });
  };

  Widget.prototype.update = function (conversation) {
    if (!conversation) return;
    this.status = conversation.status;
    this.setVerified(!!conversation.verified);
  };

  /** Holds the conversation's stream, unless streams are unavailable or
   * failed recently: then polling goes on and the stream is tried again
   * later. */
  Widget.prototype.follow = function () {
    var self = this;
    if (this.source || !this.conversation) return;
    if (typeof window.EventSource !== "function" || Date.now() < this.streamRetryAt || !this.cursor) { this.schedule(); return; }
    clearTimeout(this.timer);
    var url = this.base + "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/events?token=" +
      encodeURIComponent(this.token) + "&last_event_id=" + encodeURIComponent(this.cursor);
    var source;
    try { source = new window.EventSource(url); } catch (e) { this.streamFailed(); return; }
    this.source = source;
    var track = function (e) { if (e.lastEventId) self.cursor = e.lastEventId; };
    var opened = false;
    var errors = 0;
    var giveUp = setTimeout(function () {
      if (self.source === source && !opened) { self.closeStream(); self.streamFailed(); }
    }, STREAM_OPEN_MS);
    source.addEventListener("open", function () { opened = true; errors = 0; clearTimeout(giveUp); });
    // Failures are forgiven only once a stream delivers: one that opens
    // and is then reset or cut every time keeps backing off.
    source.addEventListener("message.created", function (e) {
      self.streamFailures = 0;
      track(e);
      var data = parse(e.data);
      if (data && data.message) self.receive([data.message]);
    });
    source.addEventListener("conversation.updated", function (e) {
      self.streamFailures = 0;
      track(e);
      var data = parse(e.data);
      if (data) self.update(data.conversation);
    });
    // Ephemeral: no id, so the cursor stays where it is.
    source.addEventListener("typing", function (e) {
      var data = parse(e.data);
      if (data && data.sender && data.sender.type === "operator") self.showTyping(data.sender, data.expires_in_ms);
    });
    // The cursor is unknown or too old: load afresh, then follow anew.
    source.addEventListener("reset", function () {
      self.closeStream();
      self.cursor = null;
      // Resets one after another mean the stream cannot be held (a
      // clock far off, say): poll for a while instead of looping.
      var again = Date.now() - self.lastReset < 10000;
      self.lastReset = Date.now();
      if (again) self.streamFailed();
      self.poll();
    });
    source.addEventListener("error", function () {
      if (self.source !== source) return;
      // EventSource reconnects by itself after a dropped connection (a
      // restart) and gives up (CLOSED) only on a refusal such as a 429.
      // A stream that never opened, or keeps failing to reopen, is not
      // going to be held here: poll instead, and try again later.
      errors += 1;
      if (source.readyState === 2 || !opened || errors >= 3) {
        self.closeStream();
        self.streamFailed();
      }
    });
  };

  Widget.prototype.streamFailed = function () {
    this.streamFailures += 1;
    var wait = Math.min(STREAM_MAX_RETRY_MS, STREAM_RETRY_MS * Math.pow(2, this.streamFailures - 1));
    this.streamRetryAt = Date.now() + wait;
    if (this.streamFailures === 1) warn("live updates unavailable; polling instead");
    this.schedule();
  };

  Widget.prototype.closeStream = function () {
    if (this.source) { this.source.close(); this.source = null; }
  };

  /** The page became visible or the network came back: a stream that is
   * not open is re-established at once from where it stopped. */
  Widget.prototype.wake = function () {
    if (!this.conversation) return;
    if (this.source && this.source.readyState === 1) return;
    this.closeStream();
    this.streamRetryAt = 0;
    this.poll();
  };

  Widget.prototype.schedule = function () {
    var self = this;
    clearTimeout(this.timer);
    if (!this.conversation || this.source) return;
    var pace = this.open && !document.hidden && this.status !== "closed" ? POLL_OPEN_MS : POLL_IDLE_MS;
    if (this.failures) pace = Math.min(POLL_MAX_BACKOFF_MS, pace * Math.pow(2, this.failures));
    this.timer = setTimeout(function () { self.poll(); }, pace);
  };

  /** Makes `window.Parley` the page's handle on the first widget on the
   * page, and runs the commands queued before the script loaded (the
   * stub of docs/widget.md keeps them in `Parley.q`). */
  function expose(widget) {
    var existing = window.Parley;
    if (typeof existing === "function" && existing.__parley) return;
    var queued = (typeof existing === "function" && Array.isArray(existing.q)) ? existing.q : [];
    var handle = function () {
      try { widget.command.apply(widget, arguments); } catch (e) { warn("command failed", e && e.message); }
    };
    handle.__parley = true;
    handle.version = VERSION;
    window.Parley = handle;
    queued.forEach(function (args) { handle.apply(null, Array.prototype.slice.call(args)); });
  }

  function boot() {
    try {
      var script = findScript();
      if (!script) { warn("could not find its script element"); return; }
      script.__parleyStarted = true;
      var registry = window.__parleyWidgets = window.__parleyWidgets || {};
      var token = script.getAttribute("data-installation-token");
      if (registry[token]) return;
      registry[token] = new Widget(script);
      expose(registry[token]);
      var start = function () { try { registry[token].start(); } catch (e) { warn("failed to start", e && e.message); } };
      if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
    } catch (e) {
      warn("failed to start", e && e.message);
    }
  }

  boot();
})();
