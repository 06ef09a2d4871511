// The "Enable notifications" control: subscribes this browser to the
// installation's pushes (Web Push) and registers the subscription for the
// session. Shown only where the browser can do it.
const button = document.getElementById("enable-push");
const status = document.getElementById("push-status");

function say(text) {
  if (status) status.textContent = text;
}

function keyBytes(base64url) {
  const padded = base64url.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (base64url.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

async function register(subscription) {
  const body = new URLSearchParams({
    csrf: button.dataset.csrf,
    platform: "web",
    push_token: JSON.stringify(subscription),
    name: "Web browser",
  });
  const res = await fetch("/app/push/subscribe", { method: "POST", body, credentials: "same-origin" });
  if (res.status !== 201) {
    let reason = `the server answered ${res.status}`;
    try {
      reason = (await res.json()).error.message || reason;
    } catch (_) {}
    throw new Error(reason);
  }
}

async function enable() {
  button.disabled = true;
  say("Asking the browser…");
  try {
    const permission = await Notification.requestPermission();
    if (permission !== "granted") {
      say("Notifications are blocked for this site in the browser's settings.");
      button.disabled = false;
      return;
    }
    const registration = await navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" });
    await navigator.serviceWorker.ready;
    const { public_key } = await (await fetch("/app/push/key", { credentials: "same-origin" })).json();
    const subscription =
      (await registration.pushManager.getSubscription()) ||
      (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) }));
    await register(subscription);
    say("Notifications are on for this browser.");
    button.hidden = true;
  } catch (e) {
    say(`Notifications could not be enabled: ${e.message}`);
    button.disabled = false;
  }
}

if (button && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window) {
  button.hidden = false;
  button.addEventListener("click", enable);
}
