// Parley's service worker: shows an operator's pushes and opens the
// conversation a notification is about. A push carries no visitor text
// unless the installation allows it (PARLEY_PUSH_CONTENT=full).
// A new release's worker takes over at once: it only shows pushes.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (_) {
    data = {};
  }
  const id = Number.isInteger(data.conversation_id) ? data.conversation_id : null;
  const title = typeof data.title === "string" ? data.title : "Parley";
  const options = {
    body: typeof data.body === "string" ? data.body : "",
    // The conversation id, as the phones' thread and tag: a newer push
    // about it replaces the one shown.
    tag: id === null ? "parley" : String(id),
    renotify: true,
    data: { url: id === null ? "/app" : `/app/conversations/${id}` },
  };
  const badge = Number.isInteger(data.badge) ? data.badge : null;
  const shown = self.registration.showNotification(title, options);
  const badged =
    badge !== null && self.navigator && "setAppBadge" in self.navigator
      ? self.navigator.setAppBadge(badge).catch(() => {})
      : Promise.resolve();
  event.waitUntil(Promise.all([shown, badged]));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const path = (event.notification.data && event.notification.data.url) || "/app";
  const target = new URL(path, self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) => {
      for (const w of windows) {
        if (w.url === target && "focus" in w) return w.focus();
      }
      return self.clients.openWindow(target);
    }),
  );
});
