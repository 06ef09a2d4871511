// The integrations pages (/app/integrations) in a real browser, as a
// partner's admin uses them: copy a token and a snippet, try the widget
// on Parley itself and answer from the inbox, point a webhook endpoint at
// a receiver and check a test event with the Standard Webhooks library,
// make and revoke a personal access token for the mobile API.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { apiClient, artifacts, launchBrowser, openContext, startParley } from "./support.mjs";

let parley, api, browser, json;

const ADMIN = { email: "admin@sandbox.parley.test", password: "sandbox-admin-password" };
const AGENT = { email: "agent@sandbox.parley.test", password: "sandbox-agent-password" };

before(async () => {
  // Webhook endpoints on loopback are allowed here: the receiver is one.
  const started = await startParley({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: "true", PARLEY_WEBHOOK_POLL_INTERVAL: "100ms" } });
  parley = started.child;
  api = started.url;
  json = apiClient(api);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  parley?.kill("SIGTERM");
});

async function signedIn(who, options) {
  const op = await openContext(browser, options);
  await op.page.goto(api + "/app/login");
  await op.page.getByLabel("Email").fill(who.email);
  await op.page.getByLabel("Password").fill(who.password);
  await op.page.getByRole("button", { name: "Sign in" }).click();
  await op.page.locator("h1", { hasText: "Inbox" }).waitFor();
  return op;
}

/** A receiver of webhook deliveries on loopback: resolves `next()` with
 * each request's headers and raw body. */
function receiver() {
  const waiting = [];
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
      const delivery = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      const w = waiting.shift();
      if (w) w(delivery);
      else received.push(delivery);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/hooks`,
        next: () => (received.length ? Promise.resolve(received.shift()) : new Promise((r) => waiting.push(r))),
        close: () => server.close(),
      }),
    ),
  );
}

describe("the integrations pages", () => {
  it("copy a token and a snippet, try the widget behind a domain lock and answer from the inbox", async () => {
    const admin = await signedIn(ADMIN);
    const { page, context, problems } = admin;
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: api });
    await page.getByRole("link", { name: "Integrations" }).click();
    await page.locator("h1", { hasText: "Sites and installations" }).waitFor();

    // A site locked to the partner's domain, with an installation.
    await page.getByLabel("Name", { exact: true }).fill("Partner shop");
    await page.getByLabel("Domains the widget may run on").fill("www.partner.example");
    await page.getByRole("button", { name: "Add site" }).click();
    await page.locator("p.notice", { hasText: "The site is added." }).waitFor();
    const site = page.locator("section.site", { has: page.locator("h2", { hasText: "Partner shop" }) });
    await site.getByLabel("New installation").fill("Shop front");
    await site.getByRole("button", { name: "Add installation" }).click();
    await page.locator("p.notice", { hasText: "The installation is added" }).waitFor();
    const installation = page.locator("article.installation", { has: page.locator("h3", { hasText: "Shop front" }) });
    await installation.locator(".badge", { hasText: "Waiting for a first heartbeat" }).waitFor();

    // The copy buttons put the token and the snippet on the clipboard.
    const token = (await installation.locator("code[id^=token-]").textContent()).trim();
    assert.match(token, /^inst_/);
    await installation.getByRole("button", { name: "Copy the public token" }).click();
    await installation.getByRole("button", { name: "Copy the public token" }).filter({ hasText: "Copied" }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), token);
    await page.locator("#announce", { hasText: "Copied." }).waitFor();
    await installation.getByRole("button", { name: "Copy the embed snippet" }).click();
    const snippet = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(snippet, `<script async src="${api}/widget.js" data-api-base="${api}" data-installation-token="${token}"></script>`);
    await page.screenshot({ path: join(artifacts, "integrations-sites.png"), fullPage: true });

    // The site's domain lock keeps the widget off any other page of
    // Parley: the sandbox page cannot use this token.
    const refused = await json("/api/v1/widget/conversations", {
      method: "POST",
      headers: { origin: api, referer: `${api}/sandbox` },
      body: JSON.stringify({ token, visitor_uuid: "not-here", message: "hi", privacy_accepted: true }),
    });
    assert.equal(refused.status, 403);

    // Try it: the widget on Parley itself, chatting as a visitor.
    await installation.getByRole("link", { name: "Try it: Shop front" }).click();
    await page.locator("h1", { hasText: "Try Shop front" }).waitFor();
    await page.locator("button.launcher").click();
    await page.locator("input[type=email]").fill("trying@partner.example");
    await page.locator("#parley-consent").check();
    await page.locator("textarea").fill("Testing the shop widget");
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id]", { hasText: "Testing the shop widget" }).waitFor();
    await page.screenshot({ path: join(artifacts, "integrations-try.png") });

    // An operator answers from the inbox; the visitor sees it live.
    const operator = await signedIn(ADMIN);
    const row = operator.page.locator("a.conversation", { hasText: "trying@partner.example" });
    await row.waitFor();
    assert.match(await row.textContent(), /Partner shop/);
    await row.click();
    await operator.page.getByLabel("Reply to the visitor").fill("Your widget works!");
    await operator.page.getByRole("button", { name: "Send reply" }).click();
    await page.locator("li.msg.operator", { hasText: "Your widget works!" }).waitFor({ timeout: 10000 });

    // The try page is not the partner's site: the installation still
    // waits for its first real heartbeat.
    await page.goto(api + "/app/integrations");
    await installation.locator(".badge", { hasText: "Waiting for a first heartbeat" }).waitFor();
    assert.deepEqual(problems, []);
    assert.deepEqual(operator.problems, []);
    await operator.context.close();
    await context.close();
  });

  it("send a test event that the standardwebhooks library verifies, and show it in the log", async () => {
    const hooks = await receiver();
    const { page, context, problems } = await signedIn(ADMIN);
    await page.goto(api + "/app/integrations/webhooks");
    await page.getByLabel("URL").fill(hooks.url);
    await page.getByLabel("message.created").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.locator("h2", { hasText: "The signing secret" }).waitFor();
    const secret = (await page.locator("#webhook-secret").textContent()).trim();
    assert.match(secret, /^whsec_/);
    for (const header of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      await page.locator(".guide code", { hasText: new RegExp(`^${header}$`) }).first().waitFor();
    }

    await page.getByLabel("Send a test event").selectOption("conversation.closed");
    await page.getByRole("button", { name: "Send test" }).click();
    await page.locator("p.notice", { hasText: "A test event is on its way" }).waitFor();
    const delivery = await hooks.next();
    const envelope = new Webhook(secret).verify(delivery.body, delivery.headers);
    assert.equal(envelope.test, true);
    assert.equal(envelope.event, "conversation.closed");
    assert.throws(() => new Webhook(secret).verify(delivery.body.replace("closed", "opened"), delivery.headers), "a changed body fails");

    // The log shows the delivery with its attempt once it is recorded
    // (just after the receiver answered): the page is read again until then.
    for (let i = 0; i < 100; i++) {
      await page.reload();
      if (await page.locator("article.delivery .badge", { hasText: "Delivered" }).count()) break;
    }
    const logged = page.locator("article.delivery", { hasText: envelope.event_id });
    await logged.locator(".badge", { hasText: "Delivered" }).waitFor();
    await logged.locator("td", { hasText: "HTTP 200" }).waitFor();
    await page.screenshot({ path: join(artifacts, "integrations-webhook.png"), fullPage: true });

    // Redeliver sends the same event again.
    await logged.getByRole("button", { name: /^Redeliver/ }).click();
    await page.locator("p.notice", { hasText: "queued again" }).waitFor();
    const again = await hooks.next();
    assert.equal(again.headers["webhook-id"], envelope.event_id);
    hooks.close();
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("make a personal access token that the mobile API takes, then revoke it", async () => {
    const { page, context, problems } = await signedIn(ADMIN);
    await page.goto(api + "/app/integrations/tokens");
    await page.getByLabel("What it is for").fill("Browser test");
    await page.getByLabel("Expires after").selectOption("7");
    await page.getByRole("button", { name: "Make token" }).click();
    await page.locator("h2", { hasText: "is ready" }).waitFor();
    const token = (await page.locator("#new-token").textContent()).trim();
    const mobile = apiClient(api, () => token);
    assert.equal((await mobile("/api/v1/mobile/conversations")).status, 200, "the mobile API takes it");

    await page.goto(api + "/app/integrations/tokens");
    const row = page.locator("tr", { hasText: "Browser test" });
    await row.locator("td", { hasText: /UTC|:/ }).last().waitFor();
    assert.ok(!(await page.content()).includes(token), "never shown again");
    await row.getByRole("button", { name: "Revoke Browser test" }).click();
    await page.locator("p.notice", { hasText: "The token is revoked" }).waitFor();
    assert.equal((await mobile("/api/v1/mobile/conversations")).status, 401, "refused once revoked");
    assert.deepEqual(problems, []);
    await context.close();
  });

  it("answer agents 403, and fit a phone-sized screen", async () => {
    const agent = await signedIn(AGENT);
    assert.equal(await agent.page.getByRole("link", { name: "Integrations" }).count(), 0);
    const answer = await agent.page.goto(api + "/app/integrations");
    assert.equal(answer.status(), 403);
    await agent.context.close();

    const phone = await signedIn(ADMIN, { viewport: { width: 360, height: 740 } });
    for (const path of ["/app/integrations", "/app/integrations/webhooks", "/app/integrations/tokens", "/app/integrations/verification"]) {
      await phone.page.goto(api + path);
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${path} scrolls sideways by ${overflow}px`);
    }
    await phone.page.goto(api + "/app/integrations/verification");
    await phone.page.getByLabel("Channel").selectOption("sms");
    await phone.page.getByLabel("To").fill("+14155550123");
    await phone.page.getByRole("button", { name: "Send test" }).click();
    await phone.page.locator("p.notice", { hasText: "The test message is sent" }).waitFor();
    const outbox = (await json("/sandbox/outbox")).body.messages;
    assert.equal(outbox[0].to, "+14155550123", "the demo keeps it in the sandbox outbox");
    await phone.page.screenshot({ path: join(artifacts, "integrations-phone.png"), fullPage: true });
    assert.deepEqual(phone.problems, []);
    await phone.context.close();
  });
});
