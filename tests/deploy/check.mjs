// Checks Parley through a TLS proxy configured with deploy/nginx.conf or
// deploy/Caddyfile (scripts/deploy-test starts them): Node.js built-ins
// only, HTTP/2 over TLS to the proxy as a browser would speak it.
//
//   node tests/deploy/check.mjs --parley http://127.0.0.1:PORT --ca cert.pem \
//     --proxy nginx=https://localhost:PORT,http://localhost:PORT [--proxy caddy=…]
//
// Prints one line per check and proxy; exits 1 when any fails.

import http from "node:http";
import http2 from "node:http2";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import tls from "node:tls";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    parley: { type: "string" },
    ca: { type: "string" },
    proxy: { type: "string", multiple: true },
  },
});
if (!args.parley || !args.ca || !args.proxy?.length) {
  console.error("usage: check.mjs --parley URL --ca FILE --proxy NAME=HTTPS_URL,HTTP_URL …");
  process.exit(2);
}
const parley = args.parley.replace(/\/$/, "");
const ca = readFileSync(args.ca);

// The test clients' own addresses. Loopback is 127.0.0.0/8 on Linux, and
// the proxies connect to Parley from 127.0.0.1, the one address Parley
// trusts (PARLEY_TRUSTED_PROXIES): a client at another address is one
// Parley must not take for the proxy, nor believe about X-Forwarded-For.
const CLIENTS = ["127.0.0.2", "127.0.0.3"];
const SPOOFED = "203.0.113.9";
// The longest an event may take from its send to the client (the brief's
// bound for a live stream and a long poll).
const PROMPT_MS = 1000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** An HTTP/2 session with the proxy at `origin` (https://localhost:PORT),
 * connected from `localAddress` to 127.0.0.1 (never ::1, which a
 * loopback source address of IPv4 cannot reach), with SNI and
 * `:authority` naming localhost as a browser would. */
function connect(origin, localAddress) {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin, {
      createConnection: () =>
        tls.connect({ host: "127.0.0.1", port: Number(url.port), servername: url.hostname, ca, localAddress, ALPNProtocols: ["h2"] }),
    });
    session.once("connect", () => resolve(session));
    // Before the connection: a failure to connect. After it, a request on
    // a broken session fails by itself; the session must not crash the run.
    session.on("error", reject);
  });
}

/** One request on an HTTP/2 session; resolves to
 * `{ status, headers, body (Buffer), text, json() }`. */
function request(session, method, path, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": method, ":path": path, ...headers });
    const chunks = [];
    let response;
    req.on("response", (h) => (response = h));
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const buf = Buffer.concat(chunks);
      resolve({ status: response[":status"], headers: response, body: buf, text: buf.toString(), json: () => JSON.parse(buf.toString()) });
    });
    req.on("error", reject);
    // Settled already when it ended; otherwise it was cut short.
    req.on("close", () => reject(new Error(`${method} ${path}: the stream closed before the answer ended`)));
    req.setTimeout(30000, () => req.close(http2.constants.NGHTTP2_CANCEL));
    req.end(body);
  });
}

const json = (value) => ({ headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(value) });
const bearer = (token, extra = {}) => ({ authorization: `Bearer ${token}`, accept: "application/json", ...extra });

/** Straight to Parley, for setting up and reading what it recorded. */
async function direct(method, path, { token, body } = {}) {
  const headers = { accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${parley}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} (direct): ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** An open Server-Sent Events response: `next(pred, ms)` resolves to the
 * first event (or `: comment`) matching `pred` that arrives within `ms`,
 * with the time it arrived. */
function openStream(session, path) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "GET", ":path": path, accept: "text/event-stream" });
    const seen = [];
    const waiting = [];
    let buffer = "";
    const deliver = () => {
      for (const w of [...waiting]) {
        const hit = seen.find(w.pred);
        if (hit) {
          waiting.splice(waiting.indexOf(w), 1);
          clearTimeout(w.timer);
          w.resolve(hit);
        }
      }
    };
    req.setEncoding("utf8");
    req.on("data", (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const item = { at: performance.now(), comment: null, event: "message", data: "", id: null };
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) item.comment = line.slice(1).trim();
          else if (line.startsWith("event:")) item.event = line.slice(6).trim();
          else if (line.startsWith("data:")) item.data += line.slice(5).trim();
          else if (line.startsWith("id:")) item.id = line.slice(3).trim();
        }
        seen.push(item);
      }
      deliver();
    });
    req.on("error", reject);
    req.on("close", () => reject(new Error("the stream closed before its headers came")));
    req.setTimeout(30000, () => req.close(http2.constants.NGHTTP2_CANCEL));
    req.on("response", (headers) => {
      resolve({
        headers,
        close: () => req.close(http2.constants.NGHTTP2_CANCEL),
        next: (pred, ms) =>
          new Promise((res, rej) => {
            const w = { pred, resolve: res, timer: setTimeout(() => rej(new Error(`nothing within ${ms} ms`)), ms) };
            waiting.push(w);
            deliver();
          }),
      });
    });
  });
}

/** GET over plain HTTP/1.1 (the redirect to HTTPS), Host naming localhost. */
function plainGet(origin, path) {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: Number(url.port), path, headers: { host: url.host } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    });
    req.on("error", reject);
    req.setTimeout(5000, () => req.destroy(new Error("no answer in 5 s")));
    req.end();
  });
}

/** A multipart/form-data body with one `file` part of `size` bytes of text. */
function upload(size) {
  const boundary = `----deploytest${randomUUID()}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat([head, Buffer.alloc(size, "a"), tail]) };
}

let failures = 0;
async function check(proxy, name, fn) {
  try {
    const detail = await fn();
    console.log(`ok    ${proxy.padEnd(7)} ${name}: ${detail}`);
  } catch (e) {
    failures++;
    console.log(`FAIL  ${proxy.padEnd(7)} ${name}: ${e.message}`);
  }
}
function expect(cond, message) {
  if (!cond) throw new Error(message);
}

// However a proxy misbehaves, the run ends.
setTimeout(() => {
  console.log("FAIL  the checks did not finish within 120 s");
  process.exit(1);
}, 120000).unref();

const creds = await direct("GET", "/sandbox/credentials");
const W = creds.widget_token;
const M = creds.mobile_token;
const admin = creds.operators.find((o) => o.role === "admin");

for (const spec of args.proxy) {
  const [name, urls] = spec.split("=");
  const [https, plain] = urls.split(",");
  const sessions = [];
  const session = async (i = 0) => (sessions[i] ??= await connect(https, CLIENTS[i]));

  // A visitor's conversation, opened through the proxy.
  let pid, cid;
  const open = async () => {
    if (pid) return;
    const s = await session();
    const res = await request(s, "POST", "/api/v1/widget/conversations", json({ token: W, visitor_uuid: randomUUID(), message: `hello through ${name}`, privacy_accepted: true }));
    expect(res.status === 201, `opening a conversation: ${res.status} ${res.text}`);
    pid = res.json().conversation.public_id;
    const list = await direct("GET", "/api/v1/mobile/conversations?per_page=100", { token: M });
    cid = list.conversations.find((c) => c.public_id === pid).id;
  };

  await check(name, "redirect", async () => {
    const res = await plainGet(plain, "/health?x=1");
    const location = res.headers.location || "";
    expect([301, 302, 307, 308].includes(res.statusCode), `http:// answered ${res.statusCode}, not a redirect`);
    expect(/^https:\/\/localhost(:\d+)?\/health\?x=1$/.test(location), `redirects to ${location}`);
    return `http:// answers ${res.statusCode} to ${location}`;
  });

  await check(name, "health", async () => {
    const s = await session();
    expect(s.alpnProtocol === "h2", `ALPN ${s.alpnProtocol}, not h2`);
    const res = await request(s, "GET", "/health", { headers: { accept: "application/json" } });
    expect(res.status === 200, `/health answered ${res.status}`);
    const report = res.json();
    expect(report.status === "ok" && report.app?.name === "parley", `report ${res.text}`);
    return `200 over HTTP/2 (TLS, ALPN h2), status ${report.status}, database ${report.checks.database.backend}`;
  });

  // The widget's stream, followed from the conversation's cursor as the
  // widget does (nothing written after the read can be missed).
  let stream, opened;
  await check(name, "stream open", async () => {
    await open();
    const s = await session();
    const read = await request(s, "GET", `/api/v1/widget/conversations/${pid}/messages?token=${W}`, { headers: { accept: "application/json" } });
    expect(read.status === 200, `reading the messages: ${read.status}`);
    const cursor = read.json().cursor;
    const asked = performance.now();
    stream = await openStream(s, `/api/v1/widget/conversations/${pid}/events?token=${W}&last_event_id=${encodeURIComponent(cursor)}`);
    opened = performance.now();
    const ms = opened - asked;
    expect(stream.headers[":status"] === 200, `the stream answered ${stream.headers[":status"]}`);
    expect(String(stream.headers["content-type"]).startsWith("text/event-stream"), `content-type ${stream.headers["content-type"]}`);
    expect(!stream.headers["content-encoding"], `the stream is compressed (${stream.headers["content-encoding"]})`);
    // EventSource is open when the headers come; the widget gives up a
    // stream that has not opened in 10 s and polls instead. nginx before
    // 1.23 holds an HTTP/2 response's headers until its first body bytes
    // (nginx ticket 1743): Parley's opening comment releases them.
    expect(ms <= PROMPT_MS, `the response headers came after ${ms.toFixed(0)} ms`);
    return `200 text/event-stream, headers after ${ms.toFixed(0)} ms`;
  });

  await check(name, "stream", async () => {
    expect(stream, "no stream (see above)");
    const s = await session();
    try {
      // A keep-alive comment (PARLEY_STREAM_KEEPALIVE=2s in the test) must
      // come through on its own: a buffering proxy would hold it back.
      const comment = await stream.next((e) => e.comment === "keep-alive", 3500);
      const text = `operator reply through ${name} ${randomUUID()}`;
      const sent = performance.now();
      const reply = await request(s, "POST", `/api/v1/mobile/conversations/${cid}/messages`, {
        headers: { ...bearer(M), "content-type": "application/json" },
        body: JSON.stringify({ body: text }),
      });
      expect(reply.status === 200 || reply.status === 201, `the operator's reply: ${reply.status} ${reply.text}`);
      const event = await stream.next((e) => e.event === "message.created" && e.data.includes(text), 5000);
      const ms = event.at - sent;
      expect(ms <= PROMPT_MS, `the reply came ${ms.toFixed(0)} ms after it was sent`);
      return `keep-alive comment ${(comment.at - opened).toFixed(0)} ms after opening, operator's reply on the widget's stream ${ms.toFixed(0)} ms after sending`;
    } finally {
      stream.close();
    }
  });

  await check(name, "long poll", async () => {
    await open();
    const s = await session();
    const first = await request(s, "GET", "/api/v1/mobile/events", { headers: bearer(M) });
    expect(first.status === 200, `GET mobile/events: ${first.status} ${first.text}`);
    const cursor = first.json().cursor;
    const started = performance.now();
    let answeredAt = null;
    const poll = request(s, "GET", `/api/v1/mobile/events?after=${encodeURIComponent(cursor)}&wait=20`, { headers: bearer(M) }).then((r) => {
      answeredAt = performance.now();
      return r;
    });
    // Held open: nothing has happened, so no answer yet.
    await Promise.race([poll, sleep(1000)]);
    expect(answeredAt === null, `answered after ${(answeredAt - started).toFixed(0)} ms with nothing new`);
    const text = `visitor message through ${name} ${randomUUID()}`;
    const sent = performance.now();
    const msg = await request(s, "POST", `/api/v1/widget/conversations/${pid}/messages`, json({ token: W, body: text }));
    expect(msg.status === 201, `the visitor's message: ${msg.status} ${msg.text}`);
    const res = await poll;
    expect(res.status === 200, `the long poll answered ${res.status} ${res.text}`);
    const events = res.json().events;
    expect(events.some((e) => e.event === "message.created" && e.data?.message?.body === text), `events ${res.text.slice(0, 300)}`);
    const ms = answeredAt - sent;
    expect(ms <= PROMPT_MS, `answered ${ms.toFixed(0)} ms after the message`);
    return `held open ${((sent - started) / 1000).toFixed(1)} s, answered ${ms.toFixed(0)} ms after a visitor's message`;
  });

  await check(name, "client address", async () => {
    const seen = [];
    for (const [i, address] of CLIENTS.entries()) {
      const s = await session(i);
      const shortcut = `deploy-${name}-${i}-${Date.now()}`.slice(0, 32);
      const res = await request(s, "POST", "/api/v1/admin/canned-responses", {
        headers: { ...bearer(M, { "x-forwarded-for": SPOOFED }), "content-type": "application/json" },
        body: JSON.stringify({ shortcut, body: "recorded with its client address" }),
      });
      expect(res.status === 201, `an admin change: ${res.status} ${res.text}`);
      const id = res.json().canned_response.id;
      const audit = await direct("GET", "/api/v1/admin/audit", { token: M });
      const entry = audit.entries.find((e) => e.target_type === "canned_response" && e.target_id === id);
      expect(entry, `no audit entry for canned response ${id}`);
      const recorded = entry.actor.client_address;
      expect(recorded !== SPOOFED, `Parley believed the client's own X-Forwarded-For (${SPOOFED})`);
      expect(recorded === address, `a client at ${address} was recorded as ${recorded}`);
      seen.push(recorded);
    }
    return `clients at ${CLIENTS.join(" and ")} recorded as ${seen.join(" and ")} (not the proxy's 127.0.0.1, not their own X-Forwarded-For: ${SPOOFED})`;
  });

  await check(name, "host", async () => {
    // The web app's sign-in from a browser without Sec-Fetch-Site is
    // judged by whether its Origin is the address it sent the form to,
    // which Parley sees only in Host: the proxy must pass it on whole.
    const s = await session();
    const origin = new URL(https).origin;
    const page = await request(s, "GET", "/app/login");
    expect(page.status === 200, `GET /app/login: ${page.status}`);
    const cookie = [page.headers["set-cookie"]].flat().map((c) => c.split(";")[0]).find((c) => c.startsWith("parley_login_csrf="));
    expect(cookie, "no sign-in form cookie");
    const token = cookie.split("=")[1];
    const form = (o) =>
      request(s, "POST", "/app/login", {
        headers: { origin: o, cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ csrf: token, email: admin.email, password: admin.password }).toString(),
      });
    const foreign = await form("https://elsewhere.example");
    expect(foreign.status === 403, `a form from another origin answered ${foreign.status}`);
    const own = await form(origin);
    expect(own.status === 303 && /\/app$/.test(own.headers.location || ""), `a form from ${origin} answered ${own.status} ${own.headers.location || own.text.slice(0, 200)}`);
    return `sign-in form with Origin ${origin} accepted (303), from another origin refused (403)`;
  });

  await check(name, "body size", async () => {
    await open();
    const s = await session();
    // PARLEY_ATTACHMENT_MAX's default, which demo runs with:
    // crates/parley/tests/api/deploy_files.rs holds the proxies' limits
    // to it.
    const max = 10 * 1024 * 1024;
    const send = (size) => {
      const { contentType, body } = upload(size);
      return request(s, "POST", `/api/v1/widget/conversations/${pid}/attachments?token=${W}`, { headers: { "content-type": contentType, accept: "application/json" }, body });
    };
    const fits = await send(max);
    expect(fits.status === 201, `a ${max}-byte file answered ${fits.status} ${fits.text.slice(0, 200)}`);
    expect(fits.json().attachment.size === max, `stored size ${fits.text}`);
    const over = await send(max + 1);
    expect(over.status === 413, `a ${max + 1}-byte file answered ${over.status}`);
    let code;
    try {
      code = over.json().error.code;
    } catch {
      throw new Error(`413 not from Parley (the proxy's limit?): ${over.text.slice(0, 120)}`);
    }
    return `a 10 MiB file (PARLEY_ATTACHMENT_MAX) is stored (201); one byte more is Parley's own 413 ${code}`;
  });

  for (const s of sessions) s?.close();
}

process.exit(failures ? 1 : 0);
