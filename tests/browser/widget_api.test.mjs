// The widget as a platform, in Chromium against a real `parley demo`: the
// host page (another origin) drives it through `window.Parley`, hears its
// events, identifies its users, and the widget fits a phone's screen and
// speaks the visitor's language.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { apiClient, artifacts, launchBrowser, openContext, startParley } from "./support.mjs";

let parley, api, creds, host, hostUrl, browser;
let json, asAdmin;

/** The queue stub of docs/widget.md, then `pre`, then the widget. */
function hostPage(apiBase, token, { pre = "", wide = false } = {}) {
  // "desktop": a page without a mobile viewport; "table": a mobile page
  // with content wider than the screen.
  const viewport = wide === "desktop" ? "" : '<meta name="viewport" content="width=device-width, initial-scale=1">';
  const content = wide ? '<div style="width:1600px;height:40px;background:#eee">A wide table</div>' : "<p>Some content.</p>";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Partner app</title>${viewport}</head>
<body><h1>Partner app</h1>${content}
<script>
window.seen = [];
window.Parley = window.Parley || function () { (Parley.q = Parley.q || []).push(arguments); };
${pre}
</script>
<script async src="${apiBase}/widget.js" data-api-base="${apiBase}" data-installation-token="${token}"></script>
</body></html>`;
}

function serveHost() {
  const pages = new Map();
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    const page = pages.get(url.pathname) ?? {};
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(hostPage(api, page.token ?? creds.widget_token, page));
  });
  server.pages = pages;
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** A page of the host site at `path` with these options. */
function page(path, options) {
  host.pages.set(path, options);
  return hostUrl + path;
}

/** Records every widget event in `window.seen` as "name" or "name:detail". */
const RECORD = `
["ready", "open", "close"].forEach(function (n) { Parley("on", n, function () { seen.push(n); }); });
Parley("on", "unread", function (d) { seen.push("unread:" + d.count); });
Parley("on", "message", function (m) { seen.push("message:" + m.sender.type + ":" + m.body); });
`;

const seen = (p) => p.evaluate(() => window.seen);

async function waitSeen(p, entry) {
  await p.waitForFunction((e) => window.seen.includes(e), entry, { timeout: 10000 });
}

before(async () => {
  const started = await startParley();
  parley = started.child;
  api = started.url;
  json = apiClient(api);
  asAdmin = apiClient(api, () => creds.mobile_token);
  creds = (await json("/sandbox/credentials")).body;
  host = await serveHost();
  hostUrl = `http://127.0.0.1:${host.address().port}`;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  host?.close();
  parley?.kill("SIGTERM");
});

async function conversationOf(email) {
  const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
  const found = list.body.conversations.find((c) => c.visitor.email === email);
  assert.ok(found, `a conversation of ${email}`);
  return found.id;
}

describe("the page API", () => {
  it("runs commands queued before the script loaded and tells its events", async () => {
    const { context, page: tab, problems } = await openContext(browser);
    await tab.goto(page("/queue", { pre: RECORD + 'Parley("open");' }));
    const panel = tab.locator("section.panel");
    await panel.waitFor({ state: "visible" });
    await waitSeen(tab, "open");
    assert.deepEqual((await seen(tab)).slice(0, 2), ["open", "ready"], "the queued open ran as the widget became ready");

    // A listener added after `ready` hears it at once.
    await tab.evaluate(() => Parley("on", "ready", () => window.seen.push("late ready")));
    assert.ok((await seen(tab)).includes("late ready"));

    await tab.evaluate(() => Parley("close"));
    await panel.waitFor({ state: "hidden" });
    await tab.evaluate(() => Parley("toggle"));
    await panel.waitFor({ state: "visible" });
    assert.deepEqual((await seen(tab)).filter((e) => e === "open" || e === "close"), ["open", "close", "open"]);

    await tab.evaluate(() => Parley("hide"));
    await tab.locator("button.launcher").waitFor({ state: "hidden" });
    await tab.evaluate(() => Parley("show"));
    await tab.locator("button.launcher").waitFor({ state: "visible" });

    // Messages both ways are told; a reply to a closed panel is unread.
    await tab.locator("input[type=email]").fill("api@example.com");
    await tab.locator("#parley-consent").check();
    await tab.locator("textarea").fill("Hello from the page");
    await tab.locator("textarea").press("Enter");
    await waitSeen(tab, "message:visitor:Hello from the page");
    const shown = tab.locator("li.msg.visitor[data-id]");
    await shown.waitFor();
    const time = await shown.locator("time").getAttribute("datetime");
    assert.ok(!Number.isNaN(Date.parse(time)), `the message shows its time: ${time}`);
    assert.match(await shown.locator("time").textContent(), /\d/);
    await tab.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    await tab.evaluate(() => Parley("close"));
    const id = await conversationOf("api@example.com");
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "Hello from us" }) });
    await waitSeen(tab, "message:operator:Hello from us");
    await waitSeen(tab, "unread:1");
    await tab.evaluate(() => Parley("open"));
    await waitSeen(tab, "unread:0");

    // `set` stores attributes operators see beside the conversation.
    await tab.evaluate(() => Parley("set", { attributes: { plan: "pro", seats: 3 } }));
    let attributes = null;
    for (let i = 0; i < 100 && !(attributes && attributes.plan); i++) {
      const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
      attributes = list.body.conversations.find((c) => c.id === id).visitor.attributes;
      if (!attributes.plan) await tab.waitForTimeout(50);
    }
    assert.deepEqual(attributes, { plan: "pro", seats: 3 });

    // Logout forgets this browser's visitor and its conversation.
    const before = await tab.evaluate(() => localStorage.getItem(`parley:${Object.keys(window.__parleyWidgets)[0]}:visitor`));
    await tab.evaluate(() => Parley("logout"));
    await tab.locator(".consent").waitFor({ state: "visible" });
    assert.equal(await tab.locator("li.msg").count(), 0, "no message of the previous visitor stays");
    assert.equal(await tab.locator("input[type=email]").inputValue(), "", "nor the address it typed");
    const token = await tab.evaluate(() => Object.keys(window.__parleyWidgets)[0]);
    const stored = await tab.evaluate((t) => [localStorage.getItem(`parley:${t}:visitor`), localStorage.getItem(`parley:${t}:conversation`)], token);
    assert.notEqual(stored[0], before, "a new visitor");
    assert.equal(stored[1], null, "no conversation");
    await tab.reload();
    await tab.locator(".consent").waitFor({ state: "visible" }); // the page's queued open ran again
    assert.equal(await tab.locator("li.msg").count(), 0);

    // A wrong command is a console warning, never an exception.
    await tab.evaluate(() => { Parley("explode"); Parley("on", "nothing", () => {}); Parley("identify", 42); });
    assert.deepEqual(problems, []);
    await context.close();
  });
});

describe("signed identity", () => {
  let installation, secret, second;

  before(async () => {
    const sites = await asAdmin("/api/v1/admin/sites");
    const list = await asAdmin(`/api/v1/admin/sites/${sites.body.sites[0].id}/installations`);
    installation = list.body.installations.find((i) => i.token === creds.widget_token).id;
    const made = await asAdmin(`/api/v1/admin/installations/${installation}/identity-secret`, { method: "POST" });
    assert.equal(made.status, 200);
    secret = made.body.identity_secret;
    // A second installation, which will take identified visitors only.
    const created = await asAdmin(`/api/v1/admin/sites/${sites.body.sites[0].id}/installations`, { method: "POST", body: JSON.stringify({ name: "Members area" }) });
    second = created.body.installation;
  });

  const hash = (key, userId) => createHmac("sha256", key).update(userId).digest("hex");
  const identifyPage = (path, call, token) =>
    page(path, { token, pre: RECORD + `Parley("identify", ${JSON.stringify(call)});` });

  it("shows one user the same history in two browsers", async () => {
    const call = { user_id: "customer-1", user_hash: hash(secret, "customer-1"), name: "Grace", email: "grace@example.com" };
    const first = await openContext(browser);
    await first.page.goto(identifyPage("/signed-in", call));
    await first.page.locator("button.launcher").click();
    await first.page.locator("#parley-consent").check();
    await first.page.locator("textarea").fill("Sent from my laptop");
    await first.page.locator("textarea").press("Enter");
    await first.page.locator("li.msg.visitor[data-id]", { hasText: "Sent from my laptop" }).waitFor();

    const secondDevice = await openContext(browser);
    await secondDevice.page.goto(hostUrl + "/signed-in");
    await secondDevice.page.locator("button.launcher").click();
    await secondDevice.page.locator("li.msg.visitor", { hasText: "Sent from my laptop" }).waitFor({ timeout: 10000 });
    assert.equal(await secondDevice.page.locator(".consent").isHidden(), true, "the conversation goes on");
    await secondDevice.page.locator("textarea").fill("And from my phone");
    await secondDevice.page.locator("textarea").press("Enter");
    await first.page.locator("li.msg.visitor", { hasText: "And from my phone" }).waitFor({ timeout: 10000 });

    const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
    const mine = list.body.conversations.filter((c) => c.visitor.user_id === "customer-1");
    assert.equal(mine.length, 1, "one conversation for the user");
    assert.equal(mine[0].visitor.identified, true);
    assert.deepEqual([...first.problems, ...secondDevice.problems], []);
    await first.context.close();
    await secondDevice.context.close();
  });

  it("shows nothing of a signed-in user to the next person at the browser", async () => {
    const a = { user_id: "customer-2", user_hash: hash(secret, "customer-2") };
    const { context, page: tab, problems } = await openContext(browser);
    await tab.goto(identifyPage("/user-a", a));
    await tab.locator("button.launcher").click();
    await tab.locator("#parley-consent").check();
    await tab.locator("textarea").fill("Private to customer 2");
    await tab.locator("textarea").press("Enter");
    await tab.locator("li.msg.visitor[data-id]").waitFor();

    // Another user signs in on the same page: nothing of the first stays.
    const b = { user_id: "customer-3", user_hash: hash(secret, "customer-3") };
    await tab.evaluate((call) => Parley("identify", call), b);
    await tab.locator(".consent").waitFor({ state: "visible" });
    assert.equal(await tab.locator("li.msg").count(), 0);

    // Back to the first user, then a page that says nobody is signed in
    // (its site forgot to call logout): the chat is never shown.
    await tab.evaluate((call) => Parley("identify", call), a);
    await tab.locator("li.msg.visitor", { hasText: "Private to customer 2" }).waitFor();
    const shown = [];
    await tab.exposeFunction("sawMessage", (n) => shown.push(n));
    // Messages live in the widget's shadow root, which an observer of
    // the document does not see into: watch the root once it exists.
    await tab.addInitScript(() => {
      new MutationObserver((_, self) => {
        const root = document.querySelector("#parley-widget")?.shadowRoot;
        if (!root) return;
        self.disconnect();
        const count = () => {
          const n = root.querySelectorAll("li.msg").length;
          if (n) window.sawMessage(n);
        };
        new MutationObserver(count).observe(root, { subtree: true, childList: true });
        count();
      }).observe(document, { subtree: true, childList: true });
    });
    await tab.goto(page("/anonymous", { pre: RECORD }));
    await tab.waitForFunction(() => window.seen.includes("ready"));
    await tab.locator("button.launcher").click();
    await tab.locator(".consent").waitFor({ state: "visible" });
    await tab.waitForTimeout(300);
    assert.equal(await tab.locator("li.msg").count(), 0);
    assert.deepEqual(shown, [], "not even for a moment");
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("refuses a bad hash and shows nothing of the user it names", async () => {
    const call = { user_id: "customer-1", user_hash: hash("idsec_guessed", "customer-1") };
    const { context, page: tab, problems } = await openContext(browser);
    const warnings = [];
    tab.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
    await tab.goto(identifyPage("/forged", call));
    await tab.locator("button.launcher").click();
    for (let i = 0; i < 100 && !warnings.some((w) => w.includes("identity_invalid")); i++) await tab.waitForTimeout(50);
    assert.ok(warnings.some((w) => w.includes("identity_invalid")), `a console warning: ${warnings}`);
    await tab.locator(".consent").waitFor({ state: "visible" });
    assert.equal(await tab.locator("li.msg").count(), 0, "no history of the user it named");
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("waits for the page to identify its user where identity is required", async () => {
    const made = await asAdmin(`/api/v1/admin/installations/${second.id}/identity-secret`, { method: "POST" });
    const required = await asAdmin(`/api/v1/admin/installations/${second.id}`, { method: "PATCH", body: JSON.stringify({ identity_required: true }) });
    assert.equal(required.status, 200);
    const { context, page: tab, problems } = await openContext(browser);
    await tab.goto(page("/members", { token: second.token, pre: RECORD }));
    await tab.waitForFunction(() => window.seen.includes("ready"));
    assert.equal(await tab.locator("button.launcher").isHidden(), true, "no chat for an anonymous visitor");
    await tab.evaluate((call) => Parley("identify", call), { user_id: "member-9", user_hash: hash(made.body.identity_secret, "member-9") });
    await tab.locator("button.launcher").waitFor({ state: "visible" });
    await tab.locator("button.launcher").click();
    await tab.locator("#parley-consent").check();
    await tab.locator("textarea").fill("Members only");
    await tab.locator("textarea").press("Enter");
    await tab.locator("li.msg.visitor[data-id]", { hasText: "Members only" }).waitFor();
    await tab.evaluate(() => Parley("logout"));
    await tab.locator("button.launcher").waitFor({ state: "hidden" });
    assert.deepEqual(problems, []);
    await context.close();
  });
});

describe("typing", () => {
  it("shows each side that the other is writing", async () => {
    const visitorSide = await openContext(browser);
    const v = visitorSide.page;
    await v.goto(page("/typing", {}));
    await v.locator("button.launcher").click();
    await v.locator("input[type=email]").fill("typist@example.com");
    await v.locator("#parley-consent").check();
    await v.locator("textarea").fill("A first question");
    await v.locator("textarea").press("Enter");
    await v.locator("li.msg.visitor[data-id]").waitFor();
    await v.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    const id = await conversationOf("typist@example.com");

    const operatorSide = await openContext(browser);
    const o = operatorSide.page;
    await o.goto(api + "/app/login");
    await o.getByLabel("Email").fill("admin@sandbox.parley.test");
    await o.getByLabel("Password").fill("sandbox-admin-password");
    await o.getByRole("button", { name: "Sign in" }).click();
    await o.locator("h1", { hasText: "Inbox" }).waitFor();
    const opened = o.waitForResponse((r) => r.url().includes("/app/events"));
    await o.goto(`${api}/app/conversations/${id}`);
    await opened;

    /** Types into `field` until `shown` appears on the other side: a
     * stream that opened a moment after the first indicator hears the
     * next one (one goes out every 2 seconds while typing). */
    async function typeUntilShown(field, shown) {
      for (let i = 0; i < 8; i++) {
        await field.pressSequentially("ab", { delay: 20 });
        try {
          await shown.waitFor({ state: "visible", timeout: 2500 });
          return;
        } catch {
          // Not yet: type on.
        }
      }
      await shown.waitFor({ state: "visible", timeout: 1 });
    }

    // The visitor writes: the operator's page says so.
    const line = o.locator("#typing");
    await typeUntilShown(v.locator("textarea"), line);
    assert.match(await line.textContent(), /is typing/);

    // The operator writes: the widget says so, with the operator's name.
    const note = v.locator("p.typing");
    await o.locator("#reply").fill("Let me check");
    await typeUntilShown(o.locator("#reply"), note);
    assert.match(await note.textContent(), /is typing/);
    await o.getByRole("button", { name: "Send reply" }).click();
    await v.locator("li.msg.operator", { hasText: "Let me check" }).waitFor({ timeout: 10000 });
    await note.waitFor({ state: "hidden" });
    assert.equal(await note.isHidden(), true, "the reply ends the indicator");
    assert.deepEqual([...visitorSide.problems, ...operatorSide.problems], []);
    await visitorSide.context.close();
    await operatorSide.context.close();
  });
});

describe("languages and hours", () => {
  /** A new site of the demo tenant with one installation: its id and token. */
  async function newSite(name, patch) {
    const site = await asAdmin("/api/v1/admin/sites", { method: "POST", body: JSON.stringify({ name }) });
    assert.equal(site.status, 201, JSON.stringify(site.body));
    const id = site.body.site.id;
    if (patch) {
      const patched = await asAdmin(`/api/v1/admin/sites/${id}`, { method: "PATCH", body: JSON.stringify(patch) });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
    }
    const made = await asAdmin(`/api/v1/admin/sites/${id}/installations`, { method: "POST", body: JSON.stringify({}) });
    return made.body.installation.token;
  }

  const words = async (token, lang) => (await json(`/api/v1/widget/config/${token}?lang=${lang}`)).body.strings;

  it("speaks German to a German browser, with the site's German texts", async () => {
    const token = await newSite("Shop DE", { texts: { de: { title: "Hilfe und Kontakt", greeting: "Hallo! Wie können wir helfen?" } } });
    const de = await words(token, "de");
    const { context, page: tab, problems } = await openContext(browser, { locale: "de-DE" });
    await tab.goto(page("/de", { token }));
    const launcher = tab.locator("button.launcher");
    await launcher.waitFor();
    assert.equal(await launcher.getAttribute("aria-label"), de.open);
    await launcher.click();
    await tab.locator("h2", { hasText: "Hilfe und Kontakt" }).waitFor();
    assert.equal(await tab.locator("button.primary[type=submit]").textContent(), de.send);
    assert.equal(await tab.locator("textarea").getAttribute("placeholder"), de.write_hint);
    assert.equal(await tab.locator("[dir]").first().getAttribute("lang"), "de");
    await tab.screenshot({ path: join(artifacts, "widget-german.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("writes Arabic right to left", async () => {
    const token = await newSite("Shop AR");
    const ar = await words(token, "ar");
    const { context, page: tab, problems } = await openContext(browser, { locale: "ar-EG" });
    await tab.goto(page("/ar", { token }));
    await tab.locator("button.launcher").click();
    await tab.locator("section.panel").waitFor({ state: "visible" });
    assert.equal(await tab.locator("section.panel").evaluate((el) => getComputedStyle(el).direction), "rtl");
    assert.equal(await tab.locator("button.primary[type=submit]").textContent(), ar.send);
    await tab.locator("#parley-consent").check();
    await tab.locator("textarea").fill("مرحبا");
    await tab.locator("textarea").press("Enter");
    const mine = tab.locator("li.msg.visitor[data-id]");
    await mine.waitFor();
    const [panel, message] = await Promise.all([tab.locator("section.panel").boundingBox(), mine.boundingBox()]);
    assert.ok(message.x < panel.x + panel.width / 2, `the visitor's message sits on the left in RTL: ${JSON.stringify({ panel, message })}`);
    await tab.screenshot({ path: join(artifacts, "widget-arabic.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("says when a closed team is back, asks for an email first and replies once", async () => {
    // Open for an hour on the weekday three days from now (UTC): closed now.
    const day = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"][(new Date().getUTCDay() + 3) % 7];
    const token = await newSite("Shop closed", { business_hours: { time_zone: "UTC", weekly: [{ day, open: "09:00", close: "10:00" }] } });
    const config = (await json(`/api/v1/widget/config/${token}?lang=en`)).body;
    assert.equal(config.online, false);
    assert.ok(config.next_open_at, "a next opening");
    const { context, page: tab, problems } = await openContext(browser, { locale: "en-GB" });
    await tab.goto(page("/closed", { token }));
    await tab.locator("button.launcher").click();
    const away = tab.locator("p.away");
    await away.waitFor();
    assert.match(await away.textContent(), /We are back/);
    assert.equal(await tab.locator("input[type=email]").getAttribute("placeholder"), config.strings.email_required, "not optional now");
    await tab.locator("#parley-consent").check();
    await tab.locator("textarea").fill("Anyone there at night?");
    await tab.locator("textarea").press("Enter");
    const error = tab.locator(".consent .error");
    await error.waitFor({ state: "visible" });
    assert.equal(await error.textContent(), config.strings.email_needed);
    assert.equal(await tab.locator("li.msg").count(), 0, "nothing sent without an address");
    await tab.locator("input[type=email]").fill("night@example.com");
    await tab.locator("textarea").fill("Anyone there at night?");
    await tab.locator("textarea").press("Enter");
    await tab.locator("li.msg.visitor[data-id]").waitFor();
    const reply = tab.locator("li.msg.system", { hasText: "We are away right now" });
    await reply.waitFor({ timeout: 10000 });
    await tab.locator("textarea").fill("Still there?");
    await tab.locator("textarea").press("Enter");
    await tab.locator("li.msg.visitor[data-id]", { hasText: "Still there?" }).waitFor();
    assert.equal(await tab.locator("li.msg.system").count(), 1, "one automatic reply");
    await tab.screenshot({ path: join(artifacts, "widget-closed.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });
});

describe("the panel on a phone", () => {
  /** Where the panel, its send and close buttons are, against what the visitor sees. */
  const measure = (tab) => tab.evaluate(() => {
    const root = document.querySelector("#parley-widget").shadowRoot;
    const vv = window.visualViewport;
    const panel = root.querySelector("section.panel").getBoundingClientRect();
    const inside = (el) => {
      const r = el.getBoundingClientRect();
      const within = (box) => r.left >= box.left - 1 && r.top >= box.top - 1 && r.right <= box.right + 1 && r.bottom <= box.bottom + 1;
      return within({ left: vv.offsetLeft, top: vv.offsetTop, right: vv.offsetLeft + vv.width, bottom: vv.offsetTop + vv.height }) && within(panel);
    };
    return {
      layout: window.innerWidth, visual: vv.width, scale: vv.scale, screenWidth: panel.width * vv.scale,
      send: inside(root.querySelector("button.primary[type=submit]")), close: inside(root.querySelector(".head button")),
    };
  });
  const phone = { viewport: { width: 390, height: 700 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

  it("fits what the visitor sees on a page wider than the screen, zoomed in or not", async () => {
    const { context, page: tab, problems } = await openContext(browser, phone);
    await tab.goto(page("/wide", { wide: "table" }));
    await tab.locator("button.launcher").click();
    await tab.locator("section.panel").waitFor({ state: "visible" });
    let fits = await measure(tab);
    assert.ok(fits.layout > fits.visual, `the page is wider than the screen: ${JSON.stringify(fits)}`);
    assert.ok(fits.send && fits.close, `the send and close buttons are on screen: ${JSON.stringify(fits)}`);
    await tab.screenshot({ path: join(artifacts, "widget-wide-page.png") });

    const cdp = await context.newCDPSession(tab);
    await cdp.send("Emulation.setPageScaleFactor", { pageScaleFactor: 2 });
    await tab.waitForFunction(() => window.visualViewport.scale === 2);
    await tab.waitForFunction(() => {
      const r = document.querySelector("#parley-widget").shadowRoot.querySelector("section.panel").getBoundingClientRect();
      return r.right <= window.visualViewport.offsetLeft + window.visualViewport.width + 1;
    });
    fits = await measure(tab);
    assert.ok(fits.send && fits.close, `zoomed in, still on screen: ${JSON.stringify(fits)}`);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("keeps its size on the screen on a page made for desktops only", async () => {
    const { context, page: tab, problems } = await openContext(browser, phone);
    await tab.goto(page("/desktop", { wide: "desktop" }));
    await tab.locator("button.launcher").click();
    await tab.locator("section.panel").waitFor({ state: "visible" });
    const fits = await measure(tab);
    assert.ok(fits.scale < 1, `the page is shown zoomed out: ${JSON.stringify(fits)}`);
    assert.ok(fits.screenWidth > 300, `the panel is readable, not shrunk with the page: ${JSON.stringify(fits)}`);
    assert.ok(fits.send && fits.close, `its buttons are on screen: ${JSON.stringify(fits)}`);
    await tab.screenshot({ path: join(artifacts, "widget-desktop-page.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });
});
