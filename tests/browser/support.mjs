// What the browser test files share: a real `parley demo` process and
// Debian's Chromium (never a download), driven by playwright-core.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const binary = process.env.PARLEY_BIN || join(root, "target", "debug", "parley");

/** Where screenshots go; CI keeps the folder as its artifacts. */
export const artifacts = join(here, "artifacts");
mkdirSync(artifacts, { recursive: true });

/** Starts `parley demo` in `dir` (a fresh folder by default) on `listen`
 * (a free port by default) with `env` added, and waits for its address.
 * Resolves to `{ child, url, dir }`. */
export function startParley({ dir = mkdtempSync(join(tmpdir(), "parley-browser-")), listen = "127.0.0.1:0", env = {} } = {}) {
  const child = spawn(binary, ["demo"], {
    cwd: dir,
    env: { PATH: process.env.PATH, PARLEY_LISTEN: listen, PARLEY_LOG: "warn", PARLEY_RATE_LIMITS: "off", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    const late = setTimeout(() => reject(new Error("parley did not start in 30 s")), 30000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/Parley listening on (\S+)/);
      if (m) {
        clearTimeout(late);
        resolve({ child, url: m[1], dir });
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`parley exited with ${code}`)));
  });
}

/** Stops a `parley demo` process and waits until it has exited. */
export function stopParley(child) {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  return exited;
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A fresh browser context with the page errors and dialogs it meets
 * collected in `problems` (a test expects none). */
export async function openContext(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("dialog", (d) => {
    problems.push(`dialog: ${d.message()}`);
    d.dismiss();
  });
  page.on("console", (m) => /Content Security Policy|Refused to/i.test(m.text()) && problems.push(`policy: ${m.text()}`));
  return { context, page, problems };
}

/** JSON over HTTP against `base`; `token` makes it an operator's request. */
export function apiClient(base, token) {
  return async function call(path, init = {}) {
    const headers = { "content-type": "application/json", ...(init.headers || {}) };
    if (token) headers.authorization = `Bearer ${token()}`;
    const res = await fetch(base + path, { ...init, headers });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
}
