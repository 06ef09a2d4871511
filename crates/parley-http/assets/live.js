// Keeps the inbox and the conversation page live. The server renders
// every page whole, and this module only refreshes parts of it: on an
// event of the operator stream (/app/events) it fetches the same page
// again and swaps in the regions that show data, never a form being
// typed in. Rendering stays in one place (the server) and the page
// without this script is the same page, only not live.
//
// The stream starts at the cursor the page was rendered at, so nothing
// that happened in between is missed; EventSource resumes a dropped
// connection from the last event id by itself. A `reset` (the cursor
// expired) or a refused session reloads the page.

const root = document.querySelector("[data-live]");
if (root) start(root);

function start(root) {
  const kind = root.dataset.live;
  const conversation = root.dataset.conversation;
  const announce = document.getElementById("announce");
  // Regions the page swaps on a change; a region holding the focus
  // waits, so a choice or a text being typed is never lost.
  const regions = kind === "inbox" ? ["conversation-list"] : ["summary", "messages", "actions", "visitor"];
  let refreshing = false;
  let again = false;

  markSeen();
  markUnread();

  const url = "/app/events?after=" + encodeURIComponent(root.dataset.cursor);
  const source = new EventSource(url);
  for (const name of ["conversation.created", "conversation.updated", "message.created"]) {
    source.addEventListener(name, (event) => onEvent(name, event));
  }
  source.addEventListener("reset", () => location.reload());
  source.addEventListener("error", () => {
    // CLOSED means the server refused the stream (the session ended):
    // the page reloads into the sign-in form. Otherwise the browser is
    // reconnecting on its own.
    if (source.readyState === EventSource.CLOSED) location.reload();
  });

  function onEvent(name, event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    const id = String(data.conversation && data.conversation.id);
    if (kind === "conversation" && id !== conversation) return;
    if (name === "message.created" && data.message) say(data);
    refresh();
  }

  function say(data) {
    const m = data.message;
    if (m.sender.type === "system") return;
    const who = m.sender.name || (m.sender.type === "visitor" ? "The visitor" : "An operator");
    const where = kind === "inbox" ? " (" + visitorName(data.conversation) + ")" : "";
    const what = m.internal ? "Note from " : "New message from ";
    announce.textContent = what + who + where + ": " + m.body;
  }

  function visitorName(c) {
    const v = c.visitor || {};
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
        const response = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (response.redirected || response.status === 401) {
          location.reload();
          return;
        }
        if (!response.ok) return;
        const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
        for (const id of regions) swap(id, fresh);
        const freshRoot = fresh.querySelector("[data-live]");
        if (freshRoot) root.dataset.last = freshRoot.dataset.last || "";
        markSeen();
        markUnread();
      } while (again);
    } catch {
      // A failed refresh is retried at the next event.
    } finally {
      refreshing = false;
    }
  }

  function swap(id, fresh) {
    const old = document.getElementById(id);
    const replacement = fresh.getElementById(id);
    if (!old || !replacement) return;
    if (old.contains(document.activeElement) && document.activeElement !== document.body) {
      again = true;
      return;
    }
    old.replaceWith(document.importNode(replacement, true));
  }

  // What this browser has seen of each conversation: the time of its
  // last message when its page was last shown. The inbox marks the
  // conversations that moved since.
  function markSeen() {
    if (kind !== "conversation" || !root.dataset.last) return;
    try {
      localStorage.setItem("parley.seen." + conversation, root.dataset.last);
    } catch {
      // Storage may be refused (private windows): nothing is marked.
    }
  }

  function markUnread() {
    if (kind !== "inbox") return;
    for (const row of document.querySelectorAll("a.conversation[data-id]")) {
      let seen = null;
      try {
        seen = localStorage.getItem("parley.seen." + row.dataset.id);
      } catch {
        return;
      }
      const unread = seen === null || seen < row.dataset.last;
      row.classList.toggle("unread", unread);
      let label = row.querySelector(".unread-label");
      if (unread && !label) {
        label = document.createElement("span");
        label.className = "unread-label";
        label.textContent = "Unread";
        row.prepend(label);
      } else if (!unread && label) {
        label.remove();
      }
    }
  }
}
