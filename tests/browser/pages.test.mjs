// Every page of the web app in a real browser: axe-core (injected, so its
// contexts bypass the pages' CSP; the other tests hold the CSP) finds no serious
// or critical accessibility violation on any of them, in the light and
// the dark theme, each is kept as a screenshot at 1440 and 390 px (the
// artifacts folder), and the flows of the settings work end to end:
// an invitation through a real SMTP server to a first sign-in, the audit
// log showing it, and one session ending another from the account page.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { apiClient, artifacts, launchBrowser, openContext, startParley } from "./support.mjs";
import { startSmtpSink } from "./smtp.mjs";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const ADMIN = { email: "admin@sandbox.parley.test", password: "sandbox-admin-password" };
const shots = join(artifacts, "pages");
mkdirSync(shots, { recursive: true });

let parley, api, browser, smtp, creds, asAdmin, conversationId, installationId;

before(async () => {
  smtp = await startSmtpSink();
  const started = await startParley({ env: { PARLEY_SMTP_URL: smtp.url, PARLEY_MAIL_FROM: "noreply@parley.test" } });
  parley = started.child;
  api = started.url;
  const json = apiClient(api);
  creds = (await json("/sandbox/credentials")).body;
  asAdmin = apiClient(api, () => creds.mobile_token);
  // Something on every page: a conversation, a canned response.
  const opened = await json("/api/v1/widget/conversations", {
    method: "POST",
    body: JSON.stringify({ token: creds.widget_token, visitor_uuid: "pages-visitor", message: "Hello, where is my order?", privacy_accepted: true }),
  });
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
  const list = await asAdmin("/api/v1/mobile/conversations");
  conversationId = list.body.conversations[0].id;
  await asAdmin("/api/v1/admin/canned-responses", { method: "POST", body: JSON.stringify({ shortcut: "thanks", body: "Thank you!" }) });
  const sites = await asAdmin("/api/v1/admin/sites");
  const installations = await asAdmin(`/api/v1/admin/sites/${sites.body.sites[0].id}/installations`);
  installationId = installations.body.installations[0].id;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  parley?.kill("SIGTERM");
  smtp?.close();
});

async function signIn(page, who) {
  await page.goto(api + "/app/login");
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password", { exact: true }).fill(who.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((url) => !url.pathname.startsWith("/app/login"));
}

/** The serious and critical violations axe-core finds on the page. */
async function violations(page) {
  await page.addScriptTag({ content: AXE });
  const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
  return found
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`);
}

const PAGES = () => [
  ["inbox", "/app"],
  ["search", "/app/search?q=order"],
  ["conversation", `/app/conversations/${conversationId}`],
  ["erase", `/app/conversations/${conversationId}/erase`],
  ["account", "/app/account"],
  ["operators", "/app/settings/operators"],
  ["sites", "/app/settings/sites"],
  ["canned", "/app/settings/canned"],
  ["audit", "/app/settings/audit"],
  ["integrations", "/app/integrations"],
  ["tokens", "/app/integrations/tokens"],
  ["webhooks", "/app/integrations/webhooks"],
  ["verification", "/app/integrations/verification"],
  ["try", `/app/integrations/installations/${installationId}/try`],
];

describe("every page", () => {
  for (const scheme of ["light", "dark"]) {
    it(`has no serious or critical accessibility violation, ${scheme}`, async () => {
      const op = await openContext(browser, { viewport: { width: 1440, height: 900 }, colorScheme: scheme, bypassCSP: true });
      const found = [];
      await signIn(op.page, ADMIN);
      for (const [name, path] of PAGES()) {
        const response = await op.page.goto(api + path);
        assert.equal(response.status(), 200, `${name}: ${path}`);
        for (const v of await violations(op.page)) found.push(`${name}: ${v}`);
        await op.page.screenshot({ path: join(shots, `${name}-1440-${scheme}.png`), fullPage: true });
      }
      await op.context.close();
      const out = await openContext(browser, { viewport: { width: 1440, height: 900 }, colorScheme: scheme, bypassCSP: true });
      for (const [name, path] of [["login", "/app/login"], ["sandbox", "/sandbox"]]) {
        await out.page.goto(api + path);
        for (const v of await violations(out.page)) found.push(`${name}: ${v}`);
        await out.page.screenshot({ path: join(shots, `${name}-1440-${scheme}.png`), fullPage: true });
      }
      await out.context.close();
      assert.deepEqual(found, [], found.join("\n"));
      assert.deepEqual(op.problems.concat(out.problems), []);
    });
  }

  it("fits a phone: no page scrolls sideways at 390 px", async () => {
    const op = await openContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await signIn(op.page, ADMIN);
    const wide = [];
    for (const [name, path] of PAGES()) {
      await op.page.goto(api + path);
      const overflow = await op.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      if (overflow > 1) wide.push(`${name}: ${overflow}px`);
      await op.page.screenshot({ path: join(shots, `${name}-390.png`), fullPage: true });
    }
    await op.context.close();
    assert.deepEqual(wide, []);
  });
});

describe("the settings' flows", () => {
  it("an invitation reaches its operator by email, who chooses a password and signs in; the audit log shows it", async () => {
    const admin = await openContext(browser);
    await signIn(admin.page, ADMIN);
    await admin.page.goto(api + "/app/settings/operators");
    await admin.page.getByLabel("Email").fill("new.agent@sandbox.parley.test");
    await admin.page.getByLabel("Name", { exact: true }).first().fill("Nina Agent");
    await admin.page.getByRole("button", { name: "Send the invitation" }).click();
    await admin.page.getByText("The invitation is sent").waitFor();
    await admin.page.getByText("has not chosen a password yet").waitFor();

    const mail = await smtp.next("new.agent@sandbox.parley.test");
    const link = mail.data.match(/https?:\/\/\S*\/app\/password\?token=[A-Za-z0-9_-]+/)[0];
    const invited = await openContext(browser);
    await invited.page.goto(link);
    await invited.page.getByText("Nina Agent").waitFor();
    await invited.page.getByLabel("New password").fill("a phrase nobody guesses");
    await invited.page.getByLabel("The same again").fill("a phrase nobody guesses");
    await invited.page.getByRole("button", { name: "Set my password" }).click();
    await invited.page.getByText("Your password is set").waitFor();
    await invited.page.getByRole("link", { name: "Sign in" }).click();
    await signIn(invited.page, { email: "new.agent@sandbox.parley.test", password: "a phrase nobody guesses" });
    await invited.page.locator("h1", { hasText: "Inbox" }).waitFor();

    await admin.page.goto(api + "/app/settings/audit");
    await admin.page.getByText("operator.invited").waitFor();
    assert.deepEqual(admin.problems.concat(invited.problems), []);
    await admin.context.close();
    await invited.context.close();
  });

  it("a site's widget title and greeting set on the settings page show in the widget", async () => {
    const admin = await openContext(browser);
    await signIn(admin.page, ADMIN);
    await admin.page.goto(api + "/app/settings/sites");
    await admin.page.getByLabel("Title").first().fill("Ask the sandbox team");
    await admin.page.getByLabel("Greeting").first().fill("Good day! We read everything.");
    await admin.page.getByRole("button", { name: /^Save the widget of / }).first().click();
    await admin.page.getByText("The site is saved").waitFor();
    const visitor = await openContext(browser);
    await visitor.page.goto(api + "/sandbox");
    await visitor.page.locator("button.launcher").click();
    await visitor.page.waitForFunction(
      () => document.querySelector("#parley-widget")?.shadowRoot?.textContent.includes("Ask the sandbox team"),
      null,
      { timeout: 10000 },
    );
    const text = await visitor.page.evaluate(() => document.querySelector("#parley-widget").shadowRoot.textContent);
    assert.ok(text.includes("Good day! We read everything."), "the greeting too");
    assert.deepEqual(admin.problems.concat(visitor.problems), []);
    await admin.context.close();
    await visitor.context.close();
  });

  it("one session ends another from the account page", async () => {
    const phone = await openContext(browser);
    await signIn(phone.page, ADMIN);
    const desk = await openContext(browser);
    await signIn(desk.page, ADMIN);
    await desk.page.goto(api + "/app/account");
    // The oldest web session listed is not this browser's: end the first
    // "End" button (this browser's own says "Sign out").
    await desk.page.getByRole("button", { name: /^End the sign-in: Web app/ }).first().click();
    await desk.page.getByText("The sign-in has ended.").waitFor();
    await phone.page.goto(api + "/app");
    assert.match(phone.page.url(), /\/app\/login/, "the other browser is signed out");
    await desk.page.goto(api + "/app");
    assert.doesNotMatch(desk.page.url(), /\/app\/login/, "this one is not");
    await phone.context.close();
    await desk.context.close();
  });
});
