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
    ".panel{position:fixed;right:16px;bottom:84px;width:min(380px,calc(100vw - 16px));height:min(560px,calc(100vh - 100px));",
    "background:#fff;color:#1f2937;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.28);display:flex;flex-direction:column;",
    "overflow:hidden;z-index:2147483647;font-size:15px;line-height:1.4}",
    ".panel[hidden]{display:none}",
    "@media (max-width:480px){.panel{right:8px;left:8px;width:auto;bottom:80px;height:calc(100vh - 96px)}}",
    ".head{background:var(--accent);color:#fff;padding:12px 14px;display:flex;align-items:center;gap:8px}",
    ".head h2{font-size:16px;margin:0;flex:1;font-weight:600}",
    ".head button{background:transparent;border:0;color:#fff;font-size:20px;line-height:1;cursor:pointer;padding:4px 8px;border-radius:6px}",
    ".greeting{padding:10px 14px;background:#f3f4f6;font-size:14px;margin:0}",
    ".log{flex:1;overflow-y:auto;padding:12px 14px;display:flex;flex-direction:column;gap:8px;margin:0;list-style:none}",
    ".msg{max-width:85%;padding:8px 11px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere}",
    ".msg.visitor{align-self:flex-end;background:var(--accent);color:#fff;border-bottom-right-radius:4px}",
    ".msg.operator{align-self:flex-start;background:#eef0f3;border-bottom-left-radius:4px}",
    ".msg.system{align-self:center;background:transparent;color:#6b7280;font-size:13px;text-align:center}",
    ".who{display:block;font-size:12px;opacity:.75;margin-bottom:2px}",
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
    ".transcript{padding:6px 14px 10px;display:flex;flex-direction:column;gap:4px}"
  ].join("");

  function parse(text) {
    try { return JSON.parse(text); } catch (e) { return null; }
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
  }

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
    api(this.base, "GET", "/api/v1/widget/config/" + encodeURIComponent(this.token)).then(function (res) {
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
      self.sync({}).catch(function () { /* retried with the first message */ });
      if (self.conversation) { self.showChat(); self.poll(); }
    }).catch(function (e) { warn("the chat service cannot be reached", e && e.message); });
  };

  Widget.prototype.heartbeat = function () {
    api(this.base, "POST", "/api/v1/widget/ping", {
      token: this.token, current_url: pageUrl(), installation_type: "web", version: VERSION
    }).catch(function () { /* a missed heartbeat is not the visitor's problem */ });
  };

  Widget.prototype.sync = function (extra) {
    var body = { token: this.token, uuid: this.visitor, current_url: pageUrl() };
    Object.keys(extra).forEach(function (k) { if (extra[k]) body[k] = extra[k]; });
    return api(this.base, "POST", "/api/v1/widget/visitors", body);
  };

  Widget.prototype.render = function () {
    var self = this;
    var cfg = this.config;
    var look = (cfg.site && cfg.site.widget) || {};
    var title = look.title || (cfg.site && cfg.site.name) || "Chat";
    // Several widgets on one page sit side by side instead of on top of each other.
    var index = document.querySelectorAll("[data-parley=widget]").length;
    var host = el("div", { id: index ? "parley-widget-" + (index + 1) : "parley-widget", "data-parley": "widget" });
    document.body.appendChild(host);
    var root = host.attachShadow({ mode: "open" });
    var accent = /^#[0-9a-fA-F]{6}$/.test(look.accent_color || "") ? look.accent_color : "#2563eb";
    var offset = ".launcher{right:" + (16 + index * 72) + "px}";
    root.appendChild(el("style", { text: ":host{--accent:" + accent + "}" + CSS + (index ? offset : "") }));

    this.launcher = el("button", { "class": "launcher", type: "button", "aria-label": "Open chat", "aria-expanded": "false", "aria-controls": "parley-panel" });
    this.launcher.innerHTML = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>';
    this.launcher.addEventListener("click", function () { self.toggle(); });
    this.badge = el("span", { "class": "badge", hidden: true, "aria-hidden": "true" });
    this.launcher.appendChild(this.badge);
    this.preview = el("button", { "class": "preview", type: "button", hidden: true });
    this.preview.addEventListener("click", function () { self.toggle(true); });

    var close = el("button", { type: "button", "aria-label": "Close chat", text: "\u00d7" });
    close.addEventListener("click", function () { self.toggle(false); });
    this.log = el("ol", { "class": "log", role: "log", "aria-live": "polite", "aria-label": "Messages" });
    this.panel = el("section", { "class": "panel", id: "parley-panel", role: "dialog", "aria-label": title, hidden: true }, [
      el("div", { "class": "head" }, [el("h2", { text: title }), close]),
      look.greeting ? el("p", { "class": "greeting", text: look.greeting }) : null,
      this.log
    ]);
    this.panel.addEventListener("keydown", function (e) { if (e.key === "Escape") { self.toggle(false); self.launcher.focus(); } });

    this.buildConsent(look);
    this.buildComposer();
    this.buildVerification();
    this.buildTranscript();
    root.appendChild(this.panel);
    root.appendChild(this.preview);
    root.appendChild(this.launcher);
    this.root = root;
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden) { self.wake(); self.markRead(); } else self.schedule();
    });
    window.addEventListener("online", function () { self.wake(); });
  };

  Widget.prototype.buildConsent = function (look) {
    var self = this;
    this.nameInput = el("input", { type: "text", autocomplete: "name", "aria-label": "Your name (optional)", placeholder: "Your name (optional)", maxlength: "255" });
    this.emailInput = el("input", { type: "email", autocomplete: "email", "aria-label": "Your email (optional)", placeholder: "Your email (optional)" });
    this.consentBox = el("input", { type: "checkbox", id: "parley-consent", required: "required" });
    var policy = el("span", { text: (look.privacy_text || "I agree that my messages are stored to answer me.") + " " });
    if (look.privacy_url && /^https?:\/\//.test(look.privacy_url)) {
      policy.appendChild(el("a", { href: look.privacy_url, target: "_blank", rel: "noopener noreferrer", text: "Privacy policy" }));
    }
    this.consentError = el("p", { "class": "error", role: "alert", hidden: true });
    // What giving an address means, said where it is given.
    var emailUse = el("p", { "class": "notice", text: "If you leave before we answer, the answer is emailed to this address." });
    this.consent = el("div", { "class": "consent" }, [
      this.nameInput, this.emailInput, emailUse,
      el("label", { "class": "check", "for": "parley-consent" }, [this.consentBox, policy]),
      this.consentError
    ]);
    this.panel.appendChild(this.consent);
  };

  Widget.prototype.buildComposer = function () {
    var self = this;
    this.input = el("textarea", { "aria-label": "Write a message", placeholder: "Write a message\u2026", maxlength: "5000", rows: "1" });
    this.send = el("button", { "class": "primary", type: "submit", text: "Send", "aria-label": "Send message" });
    var form = el("form", { "class": "compose" }, [this.input, this.send]);
    form.addEventListener("submit", function (e) { e.preventDefault(); self.submit(); });
    this.input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); self.submit(); }
    });
    this.panel.appendChild(form);
  };

  Widget.prototype.buildVerification = function () {
    var self = this;
    var methods = (this.config.installation && this.config.installation.verification_methods) || [];
    this.verify = el("div", { "class": "verify", hidden: true });
    if (!methods.length) return;
    var labels = { email_otp: "Email me a code", sms_otp: "Text me a code", magic_link: "Email me a link" };
    var open = el("button", { "class": "link", type: "button", text: "Verify my identity" });
    var select = el("select", { "aria-label": "Verification method" });
    methods.forEach(function (m) { select.appendChild(el("option", { value: m, text: labels[m] || m })); });
    var target = el("input", { type: "text", "aria-label": "Email or phone to verify (optional)", placeholder: "Email or phone (optional)" });
    var sendCode = el("button", { "class": "primary", type: "button", text: "Send" });
    var status = el("p", { "class": "notice", role: "status" });
    var code = el("input", { type: "text", inputmode: "numeric", autocomplete: "one-time-code", "aria-label": "Verification code", placeholder: "Code" });
    var confirm = el("button", { "class": "primary", type: "button", text: "Confirm" });
    var codeRow = el("div", { "class": "row", hidden: true }, [code, confirm]);
    var form = el("div", { hidden: true }, [select, el("div", { "class": "row" }, [target, sendCode])]);
    this.verifiedNote = el("p", { "class": "verified", hidden: true, text: "\u2713 You are verified" });
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
      status.textContent = "Sending\u2026";
      var body = { token: self.token, method: select.value };
      if (target.value.trim()) body.target = target.value.trim();
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/verification/start", body)
        .then(function (res) {
          sendCode.disabled = false;
          if (res.status !== 202) { status.className = "error"; status.textContent = self.problem(res, "Could not send the code."); return; }
          self.challenge = res.body.challenge;
          if (select.value === "magic_link") {
            status.textContent = "We emailed a link to " + res.body.challenge.target_hint + ". Open it, then come back here.";
            codeRow.hidden = true;
          } else {
            status.textContent = "We sent a code to " + res.body.challenge.target_hint + ".";
            codeRow.hidden = false;
            code.focus();
          }
        })
        .catch(function () { sendCode.disabled = false; status.className = "error"; status.textContent = "The chat service cannot be reached."; });
    });
    confirm.addEventListener("click", function () {
      if (!self.challenge || !code.value.trim()) return;
      confirm.disabled = true;
      var body = { token: self.token, challenge_id: self.challenge.id, code: code.value.trim() };
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/verification/confirm", body)
        .then(function (res) {
          confirm.disabled = false;
          if (res.status !== 200) { status.className = "error"; status.textContent = self.problem(res, "That did not work."); return; }
          form.hidden = true;
          codeRow.hidden = true;
          status.textContent = "";
          self.setVerified(true);
          if (!self.source) self.poll();
        })
        .catch(function () { confirm.disabled = false; status.className = "error"; status.textContent = "The chat service cannot be reached."; });
    });
  };

  /** "Email me this conversation": a transcript to the visitor's address. */
  Widget.prototype.buildTranscript = function () {
    var self = this;
    var ask = el("button", { "class": "link", type: "button", text: "Email me this conversation" });
    var status = el("p", { "class": "notice", role: "status" });
    this.transcript = el("div", { "class": "transcript", hidden: !this.conversation }, [ask, status]);
    this.panel.appendChild(this.transcript);
    ask.addEventListener("click", function () {
      ask.disabled = true;
      status.className = "notice";
      status.textContent = "Sending\u2026";
      api(self.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(self.conversation) + "/transcript", { token: self.token })
        .then(function (res) {
          ask.disabled = false;
          if (res.status === 202) { status.textContent = "On its way to " + res.body.email + "."; return; }
          status.className = "error";
          status.textContent = res.status === 422 ? "Verify your email address first: it goes only to an address you proved." : self.problem(res, "The conversation could not be sent.");
        })
        .catch(function () { ask.disabled = false; status.className = "error"; status.textContent = "The chat service cannot be reached."; });
    });
  };

  Widget.prototype.problem = function (res, fallback) {
    var err = res.body && res.body.error;
    if (!err) return fallback;
    if (err.code === "invalid_code") return "That code is not right. Try again.";
    if (err.code === "challenge_expired") return "That code has expired. Ask for a new one.";
    if (err.code === "rate_limited") return "Too many attempts. Please wait a moment.";
    if (err.fields) return Object.keys(err.fields).map(function (k) { return err.fields[k].join(" "); }).join(" ");
    return err.message || fallback;
  };

  Widget.prototype.setVerified = function (yes) {
    if (this.verifiedNote) this.verifiedNote.hidden = !yes;
  };

  Widget.prototype.toggle = function (force) {
    this.open = force === undefined ? !this.open : force;
    this.panel.hidden = !this.open;
    this.launcher.setAttribute("aria-expanded", String(this.open));
    this.launcher.setAttribute("aria-label", this.open ? "Close chat" : "Open chat");
    if (this.open) { this.input.focus(); this.scroll(); }
    this.markRead();
    this.schedule();
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
    this.launcher.setAttribute("aria-label", this.open ? "Close chat" : count ? "Open chat (" + count + " unread)" : "Open chat");
    var latest = count ? this.unread[ids.reduce(function (a, b) { return Number(a) > Number(b) ? a : b; })] : null;
    this.preview.hidden = !latest || this.open;
    if (latest) {
      var text = latest.body.length > 90 ? latest.body.slice(0, 90) + "\u2026" : latest.body;
      this.preview.textContent = "";
      if (latest.sender && latest.sender.name) this.preview.appendChild(el("span", { "class": "who", text: latest.sender.name }));
      this.preview.appendChild(document.createTextNode(text));
    }
    if (this.titleCount) {
      if (this.pageTitle === null) this.pageTitle = document.title;
      document.title = count ? "(" + count + ") " + this.pageTitle : this.pageTitle;
    }
    if (!count) this.pageTitle = null;
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
    item.appendChild(document.createTextNode(m.body));
    if (m.id) {
      item.setAttribute("data-id", String(m.id));
      this.messages[m.id] = item;
    }
    if (!node) this.log.appendChild(item);
    this.scroll();
    return item;
  };

  /** Shows messages not shown yet; one the visitor sent replaces its
   * pending copy, whichever way it came back first. */
  Widget.prototype.receive = function (list) {
    var self = this;
    (list || []).forEach(function (m) {
      var mine = m.sender && m.sender.type === "visitor" && m.client_message_id;
      var waiting = mine && self.pending[m.client_message_id] instanceof Element ? self.pending[m.client_message_id] : null;
      if (waiting) delete self.pending[m.client_message_id];
      if (self.messages[m.id]) { if (waiting) waiting.remove(); return; }
      self.show(m, waiting || undefined);
      if (m.sender && m.sender.type === "operator" && !m.read_by_visitor_at) self.unread[m.id] = m;
    });
    this.showUnread();
    this.markRead();
  };

  Widget.prototype.submit = function () {
    var text = this.input.value.trim();
    if (!text) return;
    if (!this.conversation && !this.consentBox.checked) {
      this.consentError.hidden = false;
      this.consentError.textContent = "Please accept the privacy notice to start the chat.";
      this.consentBox.focus();
      return;
    }
    this.consentError.hidden = true;
    this.input.value = "";
    var pending = el("li", { "class": "msg visitor pending" });
    pending.appendChild(document.createTextNode(text));
    var state = el("span", { "class": "state", text: "Sending\u2026" });
    pending.appendChild(state);
    this.log.appendChild(pending);
    this.scroll();
    var clientId = newUuid();
    this.pending[clientId] = pending;
    this.deliver(text, pending, clientId);
  };

  /** Sends one message; a retry sends the same client_message_id, so the
   * server recognises a message it already has. */
  Widget.prototype.deliver = function (text, pending, clientId) {
    var self = this;
    // While the conversation is being opened, later messages wait for it,
    // so a quick second message cannot open a second conversation.
    if (!this.conversation && this.opening) {
      this.opening.then(function () { self.deliver(text, pending, clientId); });
      return;
    }
    var opens = !this.conversation;
    var request;
    if (this.conversation) {
      request = api(this.base, "POST", "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/messages",
        { token: this.token, body: text, current_url: pageUrl(), client_message_id: clientId });
    } else {
      request = this.sync({ name: this.nameInput.value.trim(), email: this.emailInput.value.trim() }).then(function () {
        return api(self.base, "POST", "/api/v1/widget/conversations",
          { token: self.token, visitor_uuid: self.visitor, message: text, privacy_accepted: true, current_url: pageUrl(),
            client_message_id: clientId });
      });
    }
    var settled = request.then(function (res) {
      if (res.status === 201 && res.body) {
        if (res.body.conversation && !self.conversation) {
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
      } else {
        self.failed(text, pending, self.problem(res, "Not sent."), clientId);
      }
    }).catch(function () { self.failed(text, pending, "Not sent: the chat service cannot be reached.", clientId); });
    if (opens) {
      this.opening = settled.then(function () { self.opening = null; });
    }
  };

  Widget.prototype.failed = function (text, pending, why, clientId) {
    var self = this;
    // The stream brought the message while its answer was lost: it was
    // sent, and is shown already.
    if (!this.pending[clientId]) return;
    pending.className = "msg visitor failed";
    pending.textContent = "";
    pending.appendChild(document.createTextNode(text));
    var state = el("span", { "class": "state", role: "alert", text: why });
    var retry = el("button", { "class": "retry", type: "button", text: "Retry", "aria-label": "Retry sending this message" });
    retry.addEventListener("click", function () {
      pending.className = "msg visitor pending";
      state.textContent = "Sending\u2026";
      retry.remove();
      self.deliver(text, pending, clientId);
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
    var path = "/api/v1/widget/conversations/" + encodeURIComponent(this.conversation) + "/messages?token=" +
      encodeURIComponent(this.token) + (after ? "&after_id=" + after : "");
    api(this.base, "GET", path).then(function (res) {
      if (res.status === 404) {
        // The conversation is gone (another site, or the data was reset).
        self.conversation = null;
        self.write("conversation", null);
        self.consent.hidden = false;
        self.closeStream();
        return;
      }
      if (res.status !== 200 || !res.body) throw new Error("HTTP " + res.status);
      self.failures = 0;
      self.update(res.body.conversation);
      self.receive(res.body.messages);
      (res.body.messages || []).forEach(function (m) { if (m.id > self.lastId) self.lastId = m.id; });
      // A full page after `after_id` may not be all: its cursor is the
      // conversation's latest, so read on before following from it.
      if (after && (res.body.messages || []).length >= PAGE) { self.poll(); return; }
      if (res.body.cursor && !self.source) self.cursor = res.body.cursor;
      self.follow();
    }).catch(function (e) {
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

  function boot() {
    try {
      var script = findScript();
      if (!script) { warn("could not find its script element"); return; }
      script.__parleyStarted = true;
      var registry = window.__parleyWidgets = window.__parleyWidgets || {};
      var token = script.getAttribute("data-installation-token");
      if (registry[token]) return;
      registry[token] = new Widget(script);
      var start = function () { try { registry[token].start(); } catch (e) { warn("failed to start", e && e.message); } };
      if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
    } catch (e) {
      warn("failed to start", e && e.message);
    }
  }

  boot();
})();
