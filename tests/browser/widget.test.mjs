// The widget in a real browser: Chromium (Debian's, never a download)
// driven by playwright-core, against a real `parley demo` process, with
// the widget embedded in a page of another origin, as a partner would.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { apiClient, artifacts, launchBrowser, openContext, startParley, stopParley } from "./support.mjs";

let parley, api, creds, host, hostUrl, browser;
/** JSON against the API, as anyone and as the demo admin. */
let json, asAdmin;

let parleyDir;

/** A partner's page on another origin (another port), with other scripts around the widget. */
function hostPage(scriptBase, apiBase, token, second, unreadTitle) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Partner shop</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>button { background: red; } * { font-size: 30px; } li { display: none }</style>
<script>window.partnerReady = true;</script>
</head><body><h1>Partner shop</h1><p>Some content.</p>
<script async src="${scriptBase}/widget.js" data-api-base="${apiBase}" data-installation-token="${token}"${unreadTitle ? ' data-unread-title="true"' : ""}></script>
${second ? `<script async src="${scriptBase}/widget.js" data-api-base="${apiBase}" data-installation-token="${second}"></script>` : ""}
<script>window.afterWidget = 1;</script>
</body></html>`;
}

function serveHost() {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    const token = url.searchParams.get("token") ?? creds.widget_token;
    const base = url.searchParams.get("api") ?? api;
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(hostPage(api, base, token, url.searchParams.get("second"), url.searchParams.get("title")));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** A fresh visitor: its own context, so its own localStorage. */
function visitor(viewport) {
  return openContext(browser, viewport && { viewport });
}

/** Opens the host page and the chat panel. */
async function openChat(page, query = "") {
  await page.goto(hostUrl + "/" + query);
  await page.locator("button.launcher").click();
  await page.locator("section.panel").waitFor({ state: "visible" });
}

async function send(page, text) {
  await page.locator("textarea").fill(text);
  await page.locator("button.primary[type=submit]").click();
}

before(async () => {
  const started = await startParley();
  parley = started.child;
  parleyDir = started.dir;
  api = started.url;
  json = apiClient(api);
  asAdmin = apiClient(api, () => creds.mobile_token);
  creds = (await json("/sandbox/credentials")).body;
  host = await serveHost();
  hostUrl = `http://127.0.0.1:${host.address().port}`;
  assert.notEqual(new URL(hostUrl).origin, new URL(api).origin, "the page and the API are different origins");
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  host?.close();
  parley?.kill("SIGTERM");
});

describe("the widget", () => {
  it("takes consent, sends a message across origins and shows it", async () => {
    const { context, page, problems } = await visitor();
    await openChat(page);
    await assert.doesNotReject(page.locator("h2", { hasText: "Chat with us" }).waitFor());
    await send(page, "Hello from the shop");
    const error = page.locator(".consent .error");
    await error.waitFor({ state: "visible" });
    assert.match(await error.textContent(), /accept the privacy notice/);
    await page.locator("input[type=email]").fill("shopper@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "Hello from the shop");
    const mine = page.locator("li.msg.visitor", { hasText: "Hello from the shop" });
    await mine.waitFor();
    await page.locator("li.msg.pending").waitFor({ state: "detached" });
    assert.ok(await mine.getAttribute("data-id"), "the message carries its server id");
    assert.equal(await page.locator(".consent").isHidden(), true, "consent is asked once");

    const list = await asAdmin("/api/v1/mobile/conversations");
    const conversation = list.body.conversations.find((c) => c.visitor.email === "shopper@example.com");
    assert.ok(conversation, "the operator sees it");
    await page.screenshot({ path: join(artifacts, "widget-open.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("shows an operator's reply, keeps the conversation across reloads, and renders text as text", async () => {
    const { context, page, problems } = await visitor();
    await openChat(page);
    await page.locator("#parley-consent").check();
    await send(page, "Where is my parcel?");
    await page.locator("li.msg.visitor[data-id]").waitFor();
    const list = await asAdmin("/api/v1/mobile/conversations?status=open");
    const id = list.body.conversations[0].id;
    const reply = await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "On its way!" }) });
    assert.equal(reply.status, 200);
    await page.locator("li.msg.operator", { hasText: "On its way!" }).waitFor({ timeout: 10000 });

    await page.reload();
    await page.locator("button.launcher").click();
    await page.locator("li.msg.visitor", { hasText: "Where is my parcel?" }).waitFor();
    await page.locator("li.msg.operator", { hasText: "On its way!" }).waitFor();
    assert.equal(await page.locator(".consent").isHidden(), true, "still the same conversation");

    const attack = "<img src=x onerror=alert(1)>";
    await send(page, attack);
    const shown = page.locator("li.msg.visitor[data-id]", { hasText: "<img" });
    await shown.waitFor();
    assert.equal(await shown.locator(".body").textContent(), attack);
    const images = await page.evaluate(() => document.querySelector("#parley-widget").shadowRoot.querySelectorAll("img").length);
    assert.equal(images, 0, "nothing was parsed as HTML");
    assert.deepEqual(problems, [], "no script ran and nothing was thrown");
    await context.close();
  });

  it("verifies the visitor by email with the code from the sandbox outbox", async () => {
    const { context, page, problems } = await visitor();
    await openChat(page);
    await page.locator("#parley-consent").check();
    await send(page, "I want to check my account");
    await page.locator("li.msg.visitor[data-id]").waitFor();
    await page.locator("button.link", { hasText: "Verify my identity" }).click();
    await page.locator("select").selectOption("email_otp");
    await page.locator("input[placeholder='Email or phone (optional)']").fill("verify.me@example.com");
    await page.locator(".verify button.primary", { hasText: "Send" }).click();
    await page.locator(".verify p.notice", { hasText: "v***@example.com" }).waitFor();
    const outbox = await json("/sandbox/outbox");
    const mail = outbox.body.messages.find((m) => m.to === "verify.me@example.com");
    const code = mail.body.match(/code is (\d{6})/)[1];
    await page.locator("input[autocomplete=one-time-code]").fill(code);
    await page.locator(".verify button.primary", { hasText: "Confirm" }).click();
    await page.locator("p.verified").waitFor({ state: "visible" });
    await page.locator("li.msg.system", { hasText: "verified their email address" }).waitFor({ timeout: 10000 });
    await page.screenshot({ path: join(artifacts, "widget-verified.png") });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("is usable on a 360 px wide phone and with the keyboard", async () => {
    const { context, page, problems } = await visitor({ width: 360, height: 740 });
    await page.goto(hostUrl + "/");
    await page.locator("button.launcher").waitFor();
    await page.locator("button.launcher").focus();
    await page.keyboard.press("Enter");
    const panel = page.locator("section.panel");
    await panel.waitFor({ state: "visible" });
    const box = await panel.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= 360, `the panel fits the screen: ${JSON.stringify(box)}`);
    assert.equal(await page.locator("button.launcher").getAttribute("aria-expanded"), "true");
    assert.equal(await page.locator("ol.log").getAttribute("aria-live"), "polite");
    const focused = await page.evaluate(() => document.querySelector("#parley-widget").shadowRoot.activeElement?.tagName);
    assert.equal(focused, "TEXTAREA", "opening the chat puts the cursor in the message field");
    await page.screenshot({ path: join(artifacts, "widget-phone.png") });
    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "hidden" });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("fails quietly with a wrong token or an unreachable service", async () => {
    for (const query of ["?token=inst_wrong", "?api=http://127.0.0.1:9"]) {
      const { context, page, problems } = await visitor();
      const warnings = [];
      page.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
      await page.goto(hostUrl + "/" + query);
      await page.waitForFunction(() => window.afterWidget === 1);
      for (let i = 0; i < 100 && !warnings.some((w) => w.includes("[parley]")); i++) await page.waitForTimeout(50);
      assert.ok(warnings.some((w) => w.includes("[parley]")), `a console warning: ${warnings}`);
      assert.equal(await page.locator("button.launcher").count(), 0, "no widget appears");
      assert.deepEqual(problems, [], "nothing thrown into the page");
      assert.equal(await page.evaluate(() => window.partnerReady), true, "the page's own scripts still ran");
      await context.close();
    }
  });

  it("opens one conversation even when the first messages are sent quickly", async () => {
    const { context, page, problems } = await visitor();
    await openChat(page);
    await page.locator("input[type=email]").fill("double@example.com");
    await page.locator("#parley-consent").check();
    await page.locator("textarea").fill("first");
    await page.locator("textarea").press("Enter");
    await page.locator("textarea").fill("second");
    await page.locator("textarea").press("Enter");
    await page.locator("li.msg.visitor[data-id]", { hasText: "second" }).waitFor();
    await page.locator("li.msg.visitor[data-id]", { hasText: "first" }).waitFor();
    const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
    const mine = list.body.conversations.filter((c) => c.visitor.email === "double@example.com");
    assert.equal(mine.length, 1, "one conversation");
    const messages = await asAdmin(`/api/v1/mobile/conversations/${mine[0].id}/messages`);
    assert.deepEqual(messages.body.messages.map((m) => m.body), ["first", "second"]);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("places two widgets on one page side by side", async () => {
    const sites = await asAdmin("/api/v1/admin/sites");
    const created = await asAdmin(`/api/v1/admin/sites/${sites.body.sites[0].id}/installations`, { method: "POST", body: JSON.stringify({ name: "Second" }) });
    assert.equal(created.status, 201);
    const { context, page, problems } = await visitor();
    await page.goto(`${hostUrl}/?second=${created.body.installation.token}`);
    await page.waitForFunction(() => document.querySelectorAll("[data-parley=widget]").length === 2);
    const boxes = await page.locator("button.launcher").evaluateAll((all) => all.map((b) => b.getBoundingClientRect().toJSON()));
    assert.equal(boxes.length, 2);
    const [a, b] = boxes;
    assert.ok(a.right <= b.left || b.right <= a.left, `launchers do not overlap: ${JSON.stringify(boxes)}`);
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("works on the sandbox page under its strict content security policy", async () => {
    const { context, page, problems } = await visitor();
    const violations = [];
    page.on("console", (m) => /Content Security Policy|Refused to/i.test(m.text()) && violations.push(m.text()));
    const res = await page.goto(api + "/sandbox#access_token=kept-to-the-page");
    assert.match(res.headers()["content-security-policy"], /script-src 'self'/);
    await page.locator("button.launcher").click();
    await page.locator("section.panel").waitFor({ state: "visible" });
    await page.locator("input[type=email]").fill("csp@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "Hello from the sandbox");
    await page.locator("li.msg.visitor[data-id]", { hasText: "Hello from the sandbox" }).waitFor();
    const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
    const mine = list.body.conversations.find((c) => c.visitor.email === "csp@example.com");
    assert.ok(mine, "the operator sees it");
    assert.ok(!mine.visitor.current_url.includes("#"), `the page's fragment stays in the browser: ${mine.visitor.current_url}`);
    assert.deepEqual(violations, [], "nothing was blocked by the policy");
    assert.deepEqual(problems, []);
    await page.screenshot({ path: join(artifacts, "sandbox-page.png") });
    await context.close();
    // On a phone the page does not scroll sideways: its tables scroll in
    // their own box.
    const phone = await openContext(browser, { viewport: { width: 360, height: 740 }, isMobile: true });
    await phone.page.goto(api + "/sandbox");
    assert.equal(await phone.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true);
    assert.equal(await phone.page.getByRole("main").count(), 1);
    await phone.page.screenshot({ path: join(artifacts, "sandbox-phone.png"), fullPage: true });
    await phone.context.close();
  });

  it("shows an operator's reply within a second through its stream, without polling", async () => {
    const { context, page, problems } = await visitor();
    const polls = [];
    const streams = [];
    page.on("request", (r) => {
      if (r.method() === "GET" && /\/messages\?/.test(r.url())) polls.push(r.url());
      if (/\/events\?/.test(r.url())) streams.push(r.url());
    });
    await openChat(page);
    await page.locator("input[type=email]").fill("live@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "Anyone there?");
    await page.locator("li.msg.visitor[data-id]", { hasText: "Anyone there?" }).waitFor();
    await page.waitForFunction(() => window.__parleyWidgets && Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    assert.ok(streams.length >= 1 && streams[0].includes("last_event_id="), `the stream starts from the messages' cursor: ${streams}`);
    const id = await conversationOf("live@example.com");
    const pollsBefore = polls.length;

    for (const text of ["Yes, hello!", "How can I help?"]) {
      const reply = await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: text }) });
      assert.equal(reply.status, 200);
      await page.locator("li.msg.operator", { hasText: text }).waitFor({ timeout: 1000 });
    }
    assert.equal(polls.length, pollsBefore, `no polling while the stream is held: ${polls.slice(pollsBefore)}`);

    // Closing the conversation reaches the widget as a status change.
    await asAdmin(`/api/v1/mobile/conversations/${id}/close`, { method: "POST" });
    await page.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.status === "closed"));
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("counts what it missed on the closed launcher and reads it when the panel shows it", async () => {
    const { context, page, problems } = await visitor();
    await page.goto(hostUrl + "/");
    await page.locator("button.launcher").click();
    await page.locator("input[type=email]").fill("unread@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "Is shipping free?");
    await page.locator("li.msg.visitor[data-id]", { hasText: "Is shipping free?" }).waitFor();
    await page.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    const id = await conversationOf("unread@example.com");
    await page.locator("button.launcher").click();
    await page.locator("section.panel").waitFor({ state: "hidden" });

    for (const text of ["Yes, above 50 euros.", "Anything else I can help with?"]) {
      await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: text }) });
    }
    const badge = page.locator("button.launcher .badge");
    await badge.filter({ hasText: "2" }).waitFor({ timeout: 5000 });
    await page.locator("button.preview", { hasText: "Anything else I can help with?" }).waitFor();
    assert.match(await page.locator("button.launcher").getAttribute("aria-label"), /2 unread/);
    assert.equal(await page.title(), "Partner shop", "the page title stays the page's unless it allows otherwise");
    let messages = await asAdmin(`/api/v1/mobile/conversations/${id}/messages`);
    assert.ok(messages.body.messages.filter((m) => m.sender.type === "operator").every((m) => m.read_by_visitor_at === null), "not read yet");

    // Opening the panel reads them: the operator sees the receipts.
    await page.locator("button.preview").click();
    await page.locator("section.panel").waitFor({ state: "visible" });
    await badge.waitFor({ state: "hidden" });
    for (let i = 0; i < 50; i++) {
      messages = await asAdmin(`/api/v1/mobile/conversations/${id}/messages`);
      if (messages.body.messages.filter((m) => m.sender.type === "operator").every((m) => m.read_by_visitor_at)) break;
      await page.waitForTimeout(100);
    }
    assert.ok(messages.body.messages.filter((m) => m.sender.type === "operator").every((m) => m.read_by_visitor_at), "read receipts");

    // A reload keeps what was read: no badge for it.
    await page.reload();
    await page.locator("li.msg.operator", { hasText: "Anything else" }).waitFor({ state: "attached" });
    assert.equal(await badge.isHidden(), true);

    // With the host page's permission, the count goes in its title too.
    await page.goto(hostUrl + "/?title=1");
    await page.locator("li.msg.operator", { hasText: "Anything else" }).waitFor({ state: "attached" });
    await page.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "One more thing" }) });
    await badge.filter({ hasText: "1" }).waitFor({ timeout: 5000 });
    assert.equal(await page.title(), "(1) Partner shop");
    await page.locator("button.launcher").click();
    await badge.waitFor({ state: "hidden" });
    assert.equal(await page.title(), "Partner shop");
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("falls back to polling without a stream, and a retry after a lost answer never duplicates", async () => {
    const { context, page, problems } = await visitor();
    // No stream can be held here (a proxy that refuses them, say).
    await page.route("**/events?**", (route) => route.abort("connectionrefused"));
    await openChat(page);
    await page.locator("input[type=email]").fill("retry@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "first");
    await page.locator("li.msg.visitor[data-id]", { hasText: "first" }).waitFor();
    const id = await conversationOf("retry@example.com");

    // The server takes the next message but its answer is lost, and no
    // read gets through meanwhile: only the retry can tell what happened.
    const reads = (route) => (route.request().method() === "GET" ? route.abort("connectionreset") : route.fallback());
    await page.route("**/widget/conversations/*/messages?**", reads);
    let dropped = 0;
    await page.route("**/widget/conversations/*/messages", async (route) => {
      if (route.request().method() !== "POST" || dropped > 0) return route.continue();
      dropped += 1;
      await route.fetch();
      await route.abort("connectionreset");
    });
    await send(page, "sent once");
    await page.locator("button.retry").click();
    await page.locator("li.msg.visitor[data-id]", { hasText: "sent once" }).waitFor();
    await page.locator("li.msg.pending, li.msg.failed").waitFor({ state: "detached" });
    assert.equal(await page.locator("li.msg.visitor", { hasText: "sent once" }).count(), 1);
    const messages = await asAdmin(`/api/v1/mobile/conversations/${id}/messages`);
    assert.deepEqual(messages.body.messages.map((m) => m.body), ["first", "sent once"], "stored once");

    // The network is back: the widget catches up at once, then polls.
    await page.unroute("**/widget/conversations/*/messages?**", reads);
    await page.evaluate(() => window.dispatchEvent(new Event("online")));
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "by polling" }) });
    await page.locator("li.msg.operator", { hasText: "by polling" }).waitFor({ timeout: 10000 });
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("is served with caching headers and CORS", async () => {
    const res = await fetch(api + "/widget.js", { headers: { origin: hostUrl } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /javascript/);
    assert.equal(res.headers.get("access-control-allow-origin"), hostUrl);
    const etag = res.headers.get("etag");
    assert.ok(etag);
    const again = await fetch(api + "/widget.js", { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
  });

  // Last: it restarts the server the other tests share.
  it("loses nothing and repeats nothing when the server restarts under an open stream", async () => {
    const { context, page, problems } = await visitor();
    await openChat(page);
    await page.locator("input[type=email]").fill("restart@example.com");
    await page.locator("#parley-consent").check();
    await send(page, "before the restart");
    await page.locator("li.msg.visitor[data-id]", { hasText: "before the restart" }).waitFor();
    const id = await conversationOf("restart@example.com");
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "answer one" }) });
    await page.locator("li.msg.operator", { hasText: "answer one" }).waitFor({ timeout: 2000 });

    await stopParley(parley);
    const started = await startParley({ dir: parleyDir, listen: new URL(api).host });
    parley = started.child;
    assert.equal(started.url, api, "the same address");
    creds = (await json("/sandbox/credentials")).body;
    // Written while the widget is still reconnecting, then once it is back.
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "answer two" }) });
    await page.locator("li.msg.operator", { hasText: "answer two" }).waitFor({ timeout: 15000 });
    await page.waitForFunction(() => Object.values(window.__parleyWidgets).some((w) => w.source && w.source.readyState === 1));
    await asAdmin(`/api/v1/mobile/conversations/${id}/messages`, { method: "POST", body: JSON.stringify({ body: "answer three" }) });
    await page.locator("li.msg.operator", { hasText: "answer three" }).waitFor({ timeout: 2000 });
    const shown = await page.locator("li.msg").evaluateAll((all) => all.map((li) => li.textContent));
    const texts = ["before the restart", "answer one", "answer two", "answer three"];
    for (const text of texts) {
      assert.equal(shown.filter((t) => t.includes(text)).length, 1, `${text} once: ${JSON.stringify(shown)}`);
    }
    assert.deepEqual(problems, []);
    await context.close();
  });
});

/** The id of the conversation of the visitor with this email. */
async function conversationOf(email) {
  const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
  const found = list.body.conversations.find((c) => c.visitor.email === email);
  assert.ok(found, `a conversation of ${email}`);
  return found.id;
}
