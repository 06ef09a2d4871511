// Keeps the inbox and the conversation page live. The server renders
// every page whole, and this module only refreshes parts of it: on an
// event of the operator stream (/app/events) it fetches the same page
// again and swaps in the regions that show data, never a form being
// typed in. Rendering stays in one place (the server) and the page
// without this script is the same page, only not live.
//
// The stream starts at the cursor the page was rendered at, so nothing
// that happened in between is missed; EventSource resumes a dropped
// connection from the last event id by itself; after a refusal the
// script reconnects from the last event it saw. A `reset` (the cursor
// expired) or an ended session loads the page afresh; what was typed
// is kept as a draft in this tab and put back.

const root = document.querySelector("[data-live]");
if (root) start(root);

function start(root) {
  const kind = root.dataset.live;
  const conversation = root.dataset.conversation;
  const announce = document.getElementById("announce");
  const title = document.title;
  // Regions the page swaps on a change; a region holding the focus
  // waits, so a choice or a text being typed is never lost.
  const regions = kind === "inbox" ? ["conversation-list"] : ["conversation-list", "summary", "messages", "actions", "visitor"];
  const status = statusLine();
  const drafted = new WeakSet();
  let refreshing = false;
  let again = false;

  markUnread();
  localTimes(document);
  keepDrafts();
  sendTyping();
  attachFiles();
  cannedResponses();
  keyboard();
  // Looked at again: the inbox learns what was read elsewhere (another
  // tab, the phone), a conversation is read now that it is shown, and a
  // reload put off while the tab was hidden happens.
  let reloadWhenShown = false;
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) return;
    if (reloadWhenShown) location.assign(pageUrl);
    else refresh();
  });

  // Loads the page again, but not in a tab nobody looks at: loading a
  // conversation's page reads it.
  function reload() {
    if (document.hidden) reloadWhenShown = true;
    else location.assign(pageUrl);
  }

  // The page's own address: after a refused form the browser shows the
  // page at the form's address.
  const pageUrl = root.dataset.url || location.href;
  let source = null;
  let lastId = null;
  let delay = 1000;
  let debounce = null;
  let waiting = null;
  connect();

  function connect() {
    const from = lastId ? lastId : root.dataset.cursor;
    source = new EventSource("/app/events?after=" + encodeURIComponent(from));
    for (const name of ["conversation.created", "conversation.updated", "message.created"]) {
      source.addEventListener(name, (event) => onEvent(name, event));
    }
    source.addEventListener("open", () => {
      delay = 1000;
      status.hidden = true;
    });
    source.addEventListener("reset", reload);
    source.addEventListener("typing", onTyping);
    source.addEventListener("error", () => {
      // While the browser retries by itself the state is CONNECTING.
      // CLOSED means the answer was a refusal: a session that ended
      // (the page then goes to the sign-in form), too many streams from
      // this address, or a proxy error during a deploy, which are
      // tried again later without losing what is typed.
      status.hidden = false;
      if (source.readyState === EventSource.CLOSED) recover();
    });
  }

  async function recover() {
    try {
      // Only asks whether the session holds: it shows nothing, so it
      // reads nothing.
      const probe = await fetch(pageUrl, { credentials: "same-origin", redirect: "manual", headers: { "X-Parley-Hidden": "1" } });
      if (probe.type === "opaqueredirect" || probe.status === 401) {
        reload();
        return;
      }
    } catch {
      // Offline: try the stream again later.
    }
    setTimeout(connect, delay);
    delay = Math.min(delay * 2, 30000);
  }

  // Says, in words a screen reader reads out too, that the page is not
  // following changes right now.
  function statusLine() {
    const line = document.createElement("p");
    line.id = "live-status";
    line.className = "live-status";
    line.setAttribute("role", "status");
    line.textContent = "Not live: reconnecting… Changes appear once the connection is back.";
    line.hidden = true;
    root.prepend(line);
    return line;
  }

  // "The visitor is typing" on the conversation's page, for as long as
  // the event says, or until the visitor's message comes.
  let typingTimer = null;
  function onTyping(event) {
    const line = document.getElementById("typing");
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (kind !== "conversation" || !line || String(data.conversation_id) !== conversation) return;
    clearTimeout(typingTimer);
    line.textContent = (data.sender && data.sender.name ? data.sender.name : "The visitor") + " is typing…";
    line.hidden = false;
    typingTimer = setTimeout(() => (line.hidden = true), Math.min(data.expires_in_ms || 5000, 10000));
  }

  function stopTyping() {
    const line = document.getElementById("typing");
    clearTimeout(typingTimer);
    if (line) line.hidden = true;
  }

  // The operator writing a reply tells the visitor, at most every 2
  // seconds (what the server passes on).
  function sendTyping() {
    const field = document.getElementById("reply");
    const token = document.querySelector("form.compose input[name=csrf]");
    if (kind !== "conversation" || !field || !token) return;
    let last = 0;
    field.addEventListener("input", () => {
      const now = Date.now();
      if (!field.value.trim() || now - last < 2000) return;
      last = now;
      const body = new URLSearchParams({ csrf: token.value });
      fetch("/app/conversations/" + conversation + "/typing", { method: "POST", body, credentials: "same-origin" }).catch(() => {});
    });
  }

  // Files for a reply: chosen, dropped on the form or pasted into the
  // text, each uploaded at once with its progress (and a preview of a
  // picture), then sent with the reply through its hidden field.
  function attachFiles() {
    const form = document.querySelector("form.compose:not(.note-form)");
    const box = form && form.querySelector("div.attachments");
    const token = form && form.querySelector("input[name=csrf]");
    if (kind !== "conversation" || !box || !token) return;
    const input = box.querySelector("input[type=file]");
    const tray = box.querySelector("ul.tray");
    const ids = form.querySelector("input[name=attachment_ids]");
    const text = form.querySelector("textarea");
    const send = form.querySelector("button[type=submit]");
    const uploads = [];
    box.hidden = false;
    const settle = () => {
      const done = uploads.filter((u) => u.id);
      ids.value = done.map((u) => u.id).join(",");
      // Files alone make a reply; text is then optional.
      text.required = done.length === 0;
      send.disabled = uploads.some((u) => !u.id && !u.failed);
    };
    const add = (files) => {
      for (const file of Array.from(files || []).slice(0, Math.max(0, 10 - uploads.length))) upload(file);
    };
    const upload = (file) => {
      const entry = { id: null, failed: false };
      const item = document.createElement("li");
      if (/^image\/(png|jpeg|gif|webp)$/.test(file.type)) {
        const img = document.createElement("img");
        entry.preview = URL.createObjectURL(file);
        img.src = entry.preview;
        img.alt = "";
        item.append(img);
      }
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = file.name || "file";
      const bar = document.createElement("progress");
      bar.max = 100;
      bar.value = 0;
      bar.setAttribute("aria-label", "Uploading " + (file.name || "file"));
      const remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove " + (file.name || "file"));
      item.append(name, bar, remove);
      tray.append(item);
      uploads.push(entry);
      const xhr = new XMLHttpRequest();
      remove.addEventListener("click", () => {
        if (!entry.id && !entry.failed) xhr.abort();
        if (entry.preview) URL.revokeObjectURL(entry.preview);
        uploads.splice(uploads.indexOf(entry), 1);
        item.remove();
        settle();
      });
      const failed = (why) => {
        entry.failed = true;
        item.className = "failed";
        const state = document.createElement("span");
        state.setAttribute("role", "alert");
        state.textContent = why;
        bar.replaceWith(state);
        settle();
      };
      xhr.open("POST", "/app/conversations/" + conversation + "/attachments");
      xhr.setRequestHeader("X-Parley-Csrf", token.value);
      xhr.upload.addEventListener("progress", (e) => {
        if (e.lengthComputable) bar.value = Math.round((e.loaded / e.total) * 100);
      });
      xhr.addEventListener("load", () => {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          body = null;
        }
        if (xhr.status === 201 && body && body.attachment) {
          entry.id = body.attachment.id;
          bar.value = 100;
          item.className = "ready";
          settle();
        } else {
          const error = body && body.error;
          const fields = error && error.fields ? Object.values(error.fields).flat().join(" ") : "";
          failed(fields || (error && error.message) || "The file could not be attached.");
        }
      });
      xhr.addEventListener("error", () => failed("The service cannot be reached."));
      const data = new FormData();
      data.append("file", file, file.name || "file");
      xhr.send(data);
      settle();
    };
    box.querySelector("button.attach").addEventListener("click", () => input.click());
    input.addEventListener("change", () => {
      add(input.files);
      input.value = "";
    });
    text.addEventListener("paste", (e) => {
      const files = e.clipboardData && e.clipboardData.files;
      if (files && files.length) {
        e.preventDefault();
        add(files);
      }
    });
    const carries = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes("Files");
    form.addEventListener("dragover", (e) => {
      if (!carries(e)) return;
      e.preventDefault();
      form.classList.add("dropping");
    });
    form.addEventListener("dragleave", (e) => {
      if (e.target === form) form.classList.remove("dropping");
    });
    form.addEventListener("drop", (e) => {
      form.classList.remove("dropping");
      if (!carries(e)) return;
      e.preventDefault();
      add(e.dataTransfer.files);
    });
  }

  function onEvent(name, event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (event.lastEventId) lastId = event.lastEventId;
    const id = String(data.conversation && data.conversation.id);
    // Another conversation's event on a conversation's page changes only
    // the list beside it, and only where that list is shown (a wide
    // screen): nothing is read out for it.
    const other = kind === "conversation" && id !== conversation;
    if (other && !listShown()) return;
    if (!other && name === "message.created" && data.message) say(data);
    if (!other && name === "message.created" && data.message && data.message.sender && data.message.sender.type === "visitor") stopTyping();
    if (name === "conversation.created" && kind === "inbox") announce.textContent = "New conversation from " + visitorName(data.conversation);
    // Events come in bursts (a reply is a message and a change): one
    // refresh answers a burst. The first event of a burst starts the
    // wait and later ones do not extend it, so a steady flow of events
    // still refreshes the page every moment rather than never.
    if (debounce === null) {
      debounce = setTimeout(() => {
        debounce = null;
        refresh();
      }, 300);
    }
  }

  // Read out what was written: in the inbox the visitors' messages, on
  // the conversation page operators' too. An operator's own reply or
  // note is not: the page reloads after the form, at a cursor past it.
  function say(data) {
    const m = data.message;
    const sender = m.sender || {};
    if (sender.type === "system") return;
    if (sender.type === "operator" && kind === "inbox") return;
    const who = sender.name || (sender.type === "visitor" ? "The visitor" : "An operator");
    const where = kind === "inbox" ? " (" + visitorName(data.conversation) + ")" : "";
    const what = m.internal ? "Note from " : "New message from ";
    announce.textContent = what + who + where + ": " + m.body;
  }

  function listShown() {
    const pane = document.querySelector(".list-pane");
    return pane !== null && getComputedStyle(pane).display !== "none";
  }

  function visitorName(c) {
    const v = (c && c.visitor) || {};
    return v.name || v.email || "a visitor";
  }

  async function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      do {
        again = false;
        // A tab nobody looks at refreshes without reading: the server
        // moves the read marker only for a page that is shown.
        const headers = document.hidden ? { Accept: "text/html", "X-Parley-Hidden": "1" } : { Accept: "text/html" };
        const response = await fetch(pageUrl, { credentials: "same-origin", headers });
        if (response.redirected || response.status === 401) {
          reload();
          return;
        }
        if (!response.ok) return;
        const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
        for (const id of regions) swap(id, fresh);
        const freshRoot = fresh.querySelector("[data-live]");
        if (freshRoot) root.dataset.last = freshRoot.dataset.last || "";
        markUnread();
      } while (again);
    } catch {
      // A failed refresh is retried at the next event.
    } finally {
      refreshing = false;
    }
  }

  // A region that did not change is left alone (a screen reader keeps
  // its place). A region holding the focus waits until the focus leaves
  // it, not each time it moves inside it.
  function swap(id, fresh) {
    const old = document.getElementById(id);
    const replacement = fresh.getElementById(id);
    if (!old || !replacement) return;
    localTimes(replacement);
    if (old.innerHTML === replacement.innerHTML) return;
    if (old.contains(document.activeElement) && document.activeElement !== document.body) {
      if (waiting !== old) {
        waiting = old;
        const leave = (e) => {
          if (old.contains(e.relatedTarget)) return;
          old.removeEventListener("focusout", leave);
          waiting = null;
          setTimeout(refresh, 0);
        };
        old.addEventListener("focusout", leave);
      }
      return;
    }
    old.replaceWith(document.importNode(replacement, true));
    keepDrafts();
  }

  // The server writes times in UTC; the reader sees them in their own
  // time zone, today's as a time only, the full moment on hover.
  function localTimes(scope) {
    const today = new Date().toDateString();
    for (const t of scope.querySelectorAll("time[datetime]")) {
      const at = new Date(t.getAttribute("datetime"));
      if (Number.isNaN(at.getTime())) continue;
      t.title = at.toLocaleString();
      t.textContent =
        at.toDateString() === today
          ? at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
          : at.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    }
  }

  // The keyboard: j and k move between the inbox's conversations, or
  // the list's beside a conversation where it is shown (Enter opens the
  // one focused, as links do), Ctrl or Cmd with Enter sends
  // the reply being written, `?` lists these. Keys typed into a field are
  // the field's, but for Ctrl/Cmd+Enter in the reply box.
  function keyboard() {
    let help = null;
    const showHelp = () => {
      if (!help) {
        help = document.createElement("dialog");
        help.id = "shortcuts";
        help.setAttribute("aria-labelledby", "shortcuts-title");
        const heading = document.createElement("h2");
        heading.id = "shortcuts-title";
        heading.textContent = "Keyboard shortcuts";
        const list = document.createElement("dl");
        for (const [keys, what] of [
          ["j / k", "Next / previous conversation in the list"],
          ["Enter", "Open the conversation"],
          ["Ctrl+Enter or ⌘+Enter", "Send the reply"],
          ["/ in the reply box", "Put in a canned response"],
          ["?", "This list"],
        ]) {
          const dt = document.createElement("dt");
          const kbd = document.createElement("kbd");
          kbd.textContent = keys;
          dt.append(kbd);
          const dd = document.createElement("dd");
          dd.textContent = what;
          list.append(dt, dd);
        }
        const close = document.createElement("button");
        close.type = "button";
        close.textContent = "Close";
        close.addEventListener("click", () => help.close());
        help.append(heading, list, close);
        document.body.append(help);
      }
      if (!help.open) help.showModal();
    };
    const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
    document.addEventListener("keydown", (e) => {
      const reply = document.getElementById("reply");
      // Not when the canned responses' list took the key: Enter there
      // puts the chosen text in, for the operator to read before sending.
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && reply && e.target === reply && !e.defaultPrevented) {
        e.preventDefault();
        if (reply.form && reply.form.reportValidity()) reply.form.requestSubmit();
        return;
      }
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (e.key === "?") {
        e.preventDefault();
        showHelp();
      } else if ((e.key === "j" || e.key === "k") && (kind === "inbox" || listShown())) {
        const rows = [...document.querySelectorAll("a.conversation[data-id]")];
        if (!rows.length) return;
        e.preventDefault();
        const at = rows.indexOf(document.activeElement);
        const next = at < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, at + (e.key === "j" ? 1 : -1)));
        rows[next].focus();
      }
    });
  }

  // Canned responses: `/` and the start of a shortcut in the reply box
  // offer the team's texts (fetched once, when first asked for); the
  // arrows choose, Enter or Tab puts the one chosen in place of what was
  // typed, Escape closes. Without this script the box is a plain text box.
  function cannedResponses() {
    const field = document.getElementById("reply");
    if (kind !== "conversation" || !field) return;
    let list = null;
    let loading = null;
    let shown = [];
    let active = 0;
    const box = document.createElement("ul");
    box.id = "canned-options";
    box.className = "canned-options";
    box.setAttribute("role", "listbox");
    box.setAttribute("aria-label", "Canned responses");
    box.hidden = true;
    field.insertAdjacentElement("afterend", box);
    // A textarea keeps its textbox role (aria-expanded is not its), so the
    // list is tied to it by aria-controls and the active option announced
    // through aria-activedescendant.
    field.setAttribute("aria-autocomplete", "list");
    field.setAttribute("aria-controls", box.id);
    const load = () =>
      loading ||
      (loading = fetch("/app/canned-responses", { headers: { accept: "application/json" } })
        .then((res) => (res.ok ? res.json() : { canned_responses: [] }))
        .then((body) => { list = body.canned_responses || []; })
        .catch(() => { list = []; }));
    // The `/word` that ends just before the caret, if one does.
    const typed = () => {
      const before = field.value.slice(0, field.selectionStart);
      const found = /(^|\s)\/([A-Za-z0-9_-]*)$/.exec(before);
      return found ? { start: before.length - found[2].length - 1, word: found[2].toLowerCase() } : null;
    };
    const close = () => {
      box.hidden = true;
      shown = [];
      field.removeAttribute("aria-activedescendant");
    };
    const render = () => {
      box.textContent = "";
      shown.forEach((c, i) => {
        const option = document.createElement("li");
        option.id = "canned-option-" + c.id;
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", String(i === active));
        const name = document.createElement("strong");
        name.textContent = "/" + c.shortcut;
        const text = document.createElement("span");
        text.textContent = " " + c.body.split("\n")[0];
        option.append(name, text);
        // Chosen with the pointer without leaving the text box.
        option.addEventListener("mousedown", (e) => {
          e.preventDefault();
          choose(i);
        });
        box.append(option);
      });
      box.hidden = shown.length === 0;
      if (shown[active]) field.setAttribute("aria-activedescendant", "canned-option-" + shown[active].id);
      else field.removeAttribute("aria-activedescendant");
    };
    const update = async () => {
      if (!typed()) return close();
      if (!list) await load();
      // Typing went on while the list came.
      const at = typed();
      if (!at) return close();
      shown = list.filter((c) => c.shortcut.startsWith(at.word)).slice(0, 8);
      active = 0;
      render();
    };
    const choose = (i) => {
      const at = typed();
      const c = shown[i];
      close();
      if (!at || !c) return;
      field.setRangeText(c.body, at.start, field.selectionStart, "end");
      // As if typed: the draft is kept and the visitor sees typing.
      field.dispatchEvent(new Event("input", { bubbles: true }));
      field.focus();
    };
    field.addEventListener("input", update);
    field.addEventListener("blur", close);
    field.addEventListener("keydown", (e) => {
      if (box.hidden || !shown.length) return;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        render();
      } else if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        choose(active);
      } else if (e.key === "Escape") {
        e.preventDefault();
        close();
      }
    });
  }

  // What is typed in the page's text fields is kept in this tab until it
  // is sent: a reload (an ended session, an expired cursor) or a form
  // posted after the session ended puts it back. A draft that now shows
  // as a message was sent, and is dropped.
  function keepDrafts() {
    if (kind !== "conversation") return;
    const sent = new Set([...document.querySelectorAll("#messages .body")].map((b) => b.textContent));
    for (const field of document.querySelectorAll("textarea[id]")) {
      if (drafted.has(field)) continue;
      drafted.add(field);
      const key = "parley.draft." + conversation + "." + field.id;
      try {
        const draft = sessionStorage.getItem(key);
        if (draft && sent.has(draft.trim())) sessionStorage.removeItem(key);
        else if (draft && !field.value) field.value = draft;
        field.addEventListener("input", () => {
          if (field.value) sessionStorage.setItem(key, field.value);
          else sessionStorage.removeItem(key);
        });
      } catch {
        // Storage may be refused: nothing is kept.
      }
    }
  }

  // Which conversations are unread is the server's (each operator's read
  // marker, moved when a conversation's page is shown): the rows say so,
  // and the title counts them.
  function markUnread() {
    if (kind !== "inbox") return;
    const count = document.querySelectorAll("a.conversation.unread[data-id]").length;
    // A tab in the background still says there is something to read.
    document.title = count ? "(" + count + ") " + title : title;
  }
}
