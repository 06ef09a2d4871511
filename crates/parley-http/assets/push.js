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

/** The registration once its worker is active (the inbox, at `/app`, is
 * outside the worker's `/app/` scope, so `serviceWorker.ready` would
 * never settle there). */
function activated(registration) {
  // An active worker is all a subscription needs, even while an update
  // waits behind it.
  const worker = registration.active || registration.installing || registration.waiting;
  if (!worker || worker.state === "activated") return Promise.resolve(registration);
  return new Promise((resolve, reject) => {
    worker.addEventListener("statechange", () => {
      if (worker.state === "activated") resolve(registration);
      if (worker.state === "redundant") reject(new Error("the service worker could not be installed"));
    });
  });
}

function sameKey(subscription, key) {
  const held = subscription.options && subscription.options.applicationServerKey;
  if (!held) return false;
  const bytes = new Uint8Array(held);
  return bytes.length === key.length && bytes.every((b, i) => b === key[i]);
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
    const registration = await activated(await navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }));
    const { public_key } = await (await fetch("/app/push/key", { credentials: "same-origin" })).json();
    const key = keyBytes(public_key);
    let subscription = await registration.pushManager.getSubscription();
    // A subscription made with another key (an earlier installation's)
    // would have every push refused: it is replaced.
    if (subscription && !sameKey(subscription, key)) {
      await subscription.unsubscribe();
      subscription = null;
    }
    subscription ||= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
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
