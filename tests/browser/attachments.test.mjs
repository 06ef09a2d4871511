// Attachments in a real browser: a visitor sends a picture from a
// partner's page (chosen, pasted and dropped), sees it inline; an
// operator sees it in /app and answers with a PDF alone; the visitor's
// widget shows the PDF as a download served with safe headers. A
// conversation erased under an open widget leaves it.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { deflateSync } from "node:zlib";
import { join } from "node:path";
import { apiClient, artifacts, launchBrowser, openContext, startParley } from "./support.mjs";

let parley, api, creds, host, hostUrl, browser, asAdmin;

const ADMIN = { email: "admin@sandbox.parley.test", password: "sandbox-admin-password" };
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");

/** CRC-32 as PNG chunks carry it. */
function crc32(bytes) {
  let crc = ~0;
  for (const b of bytes) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return ~crc >>> 0;
}

/** A real PNG of `width` x `height`, a gradient of one hue. */
function png(width, height) {
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, "ascii"), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) row.set([x % 256, y % 256, 120], 1 + x * 3);
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function serveHost() {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Partner shop</title></head>
<body><h1>Partner shop</h1>
<script async src="${api}/widget.js" data-api-base="${api}" data-installation-token="${creds.widget_token}"></script>
</body></html>`);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

before(async () => {
  const started = await startParley();
  parley = started.child;
  api = started.url;
  const json = apiClient(api);
  creds = (await json("/sandbox/credentials")).body;
  asAdmin = apiClient(api, () => creds.mobile_token);
  host = await serveHost();
  hostUrl = `http://127.0.0.1:${host.address().port}`;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  host?.close();
  parley?.kill("SIGTERM");
});

/** Polls `check` until it answers something true (at most 15 s). */
async function until(check, what) {
  for (let i = 0; i < 150; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail("timed out waiting for " + what);
}

describe("attachments", () => {
  it("a visitor sends a picture, an operator answers with a PDF, each sees the other's file", async () => {
    const visitor = await openContext(browser);
    const page = visitor.page;
    await page.goto(hostUrl + "/");
    await page.locator("button.launcher").click();
    await page.locator("section.panel").waitFor({ state: "visible" });
    assert.equal(await page.locator("button.attach").isHidden(), true, "no files before the conversation exists");
    await page.locator("#parley-consent").check();
    await page.locator("textarea").fill("My screen looks odd");
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id]", { hasText: "My screen looks odd" }).waitFor();
    await page.locator("button.attach").waitFor({ state: "visible" });

    // Chosen with the button's file field, then one pasted and one dropped.
    await page.locator("section.panel input[type=file]").setInputFiles({ name: "screen.png", mimeType: "image/png", buffer: png(900, 600) });
    const pasted = [...png(40, 40)];
    await page.evaluate((bytes) => {
      const field = document.querySelector("[data-parley=widget]").shadowRoot.querySelector("textarea");
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], "pasted.png", { type: "image/png" }));
      field.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, pasted);
    const tray = page.locator("ul.tray li");
    assert.equal(await tray.count(), 2, "the chosen and the pasted picture");
    assert.ok(await page.locator("ul.tray li img").first().isVisible(), "a picture is previewed before it is sent");
    await until(async () => (await page.locator("ul.tray li.ready").count()) === 2, "both uploads to finish");
    await page.locator("button.primary[type=submit]").click();
    const picture = page.locator("li.msg.visitor[data-id] a.file img").first();
    await picture.waitFor();
    assert.equal(await page.locator("li.msg.visitor[data-id] a.file img").count(), 2, "one message with both pictures");
    // Loaded across origins from the signed link, at the thumbnail's size.
    await until(() => picture.evaluate((img) => img.complete && img.naturalWidth > 0), "the thumbnail to load");
    assert.equal(await picture.evaluate((img) => img.naturalWidth), 320);
    assert.equal(await picture.getAttribute("alt"), "screen.png");
    assert.equal(await page.locator("ul.tray").isHidden(), true, "the tray is emptied once sent");

    // The operator sees it in /app and answers with a PDF alone.
    const list = await asAdmin("/api/v1/mobile/conversations?per_page=100");
    const conversation = list.body.conversations.find((c) => c.last_message_at && c.visitor && !c.visitor.email && c.status === "unassigned");
    assert.ok(conversation, "the conversation is in the inbox");
    const operator = await openContext(browser);
    const op = operator.page;
    await op.goto(api + "/app/login");
    await op.getByLabel("Email").fill(ADMIN.email);
    await op.getByLabel("Password").fill(ADMIN.password);
    await op.getByRole("button", { name: "Sign in" }).click();
    await op.locator("h1", { hasText: "Inbox" }).waitFor();
    await op.goto(`${api}/app/conversations/${conversation.id}`);
    const seen = op.locator("ol#messages ul.files img").first();
    await seen.waitFor();
    await until(() => seen.evaluate((img) => img.complete && img.naturalWidth > 0), "the operator's thumbnail to load");
    await op.locator("button.attach").waitFor({ state: "visible" });
    await op.locator("#reply-files").setInputFiles({ name: "Guide März.pdf", mimeType: "application/pdf", buffer: PDF });
    await op.locator("ul.tray li.ready").waitFor();
    await op.getByRole("button", { name: "Send reply" }).click();
    await op.locator("ol#messages a.file", { hasText: "Guide März.pdf" }).waitFor();

    // The visitor's widget shows it as a download, served safely.
    const download = page.locator("li.msg.operator a.file", { hasText: "Guide März.pdf" });
    await download.waitFor({ timeout: 15000 });
    const href = await download.getAttribute("href");
    assert.equal(await download.getAttribute("target"), "_blank");
    const res = await fetch(href);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/octet-stream");
    assert.match(res.headers.get("content-disposition"), /^attachment; .*filename\*=UTF-8''Guide%20M%C3%A4rz\.pdf/);
    assert.equal(res.headers.get("content-security-policy"), "sandbox; default-src 'none'");
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), PDF);
    await page.screenshot({ path: join(artifacts, "widget-attachments.png") });
    await op.screenshot({ path: join(artifacts, "app-attachments.png") });
    assert.deepEqual(visitor.problems, []);
    assert.deepEqual(operator.problems, []);
    await visitor.context.close();
    await operator.context.close();
  });

  it("takes a dropped file and refuses one the site does not take, in the visitor's words", async () => {
    const visitor = await openContext(browser);
    const page = visitor.page;
    await page.goto(hostUrl + "/");
    await page.locator("button.launcher").click();
    await page.locator("#parley-consent").check();
    await page.locator("textarea").fill("Here comes a file");
    await page.locator("button.primary[type=submit]").click();
    await page.locator("button.attach").waitFor({ state: "visible" });
    // Dropped on the panel.
    const panel = page.locator("section.panel");
    const data = await page.evaluateHandle((bytes) => {
      const d = new DataTransfer();
      d.items.add(new File([new Uint8Array(bytes)], "notes.txt", { type: "text/plain" }));
      return d;
    }, [...Buffer.from("some notes\n")]);
    await panel.dispatchEvent("dragover", { dataTransfer: data });
    await panel.dispatchEvent("drop", { dataTransfer: data });
    await page.locator("ul.tray li.ready", { hasText: "notes.txt" }).waitFor();
    // An executable is refused, said beside the file; sending waits for none.
    await page.locator("section.panel input[type=file]").setInputFiles({ name: "setup.exe", mimeType: "application/octet-stream", buffer: Buffer.from("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff") });
    const refused = page.locator("ul.tray li.failed [role=alert]");
    await refused.waitFor();
    assert.match(await refused.textContent(), /not a type this site takes/);
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id] a.file", { hasText: "notes.txt" }).waitFor();
    assert.deepEqual(visitor.problems, []);
    await visitor.context.close();
  });
  it("a conversation erased under an open widget leaves it, and the next message starts a new one", async () => {
    const visitor = await openContext(browser);
    const page = visitor.page;
    await page.goto(hostUrl + "/");
    await page.locator("button.launcher").click();
    await page.locator("#parley-consent").check();
    await page.locator("textarea").fill("Please forget me afterwards");
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id]", { hasText: "Please forget me afterwards" }).waitFor();
    await page.locator("input[type=file]").setInputFiles({ name: "me.png", mimeType: "image/png", buffer: png(60, 40) });
    await page.locator("ul.tray li.ready").waitFor();
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id] a.file img").waitFor();

    const list = await asAdmin("/api/v1/mobile/conversations?per_page=1");
    const erased = list.body.conversations[0];
    const gone = await asAdmin(`/api/v1/admin/conversations/${erased.id}`, { method: "DELETE" });
    assert.equal(gone.status, 204);

    // The next message finds the conversation gone: nothing of it stays,
    // and the words are back in the box.
    await page.locator("textarea").fill("Are you still there?");
    await page.locator("button.primary[type=submit]").click();
    await until(async () => (await page.locator("li.msg").count()) === 0, "the erased conversation to leave the widget");
    assert.equal(await page.locator("textarea").inputValue(), "Are you still there?");
    assert.equal(await page.locator("#parley-consent").isVisible(), true, "a new conversation asks for consent again");
    assert.equal(await page.locator("button.attach").isHidden(), true);

    await page.locator("#parley-consent").check();
    await page.locator("button.primary[type=submit]").click();
    await page.locator("li.msg.visitor[data-id]", { hasText: "Are you still there?" }).waitFor();
    const after = await asAdmin("/api/v1/mobile/conversations?per_page=1");
    assert.notEqual(after.body.conversations[0].id, erased.id, "a new conversation, under a new id");
    assert.deepEqual(visitor.problems, []);
    await visitor.context.close();
  });
});
