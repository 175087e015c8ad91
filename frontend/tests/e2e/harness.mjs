// Starts the real backend (SQLite in a temp dir, serving the built studio) and a
// Debian chromium driven by playwright-core. Never downloads a browser.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const frontendDir = resolve(here, "..", "..");
export const repoDir = resolve(frontendDir, "..");
export const artifactsDir = join(frontendDir, "test-results");
const haico = process.env.HAICO_BIN ?? join(repoDir, ".venv", "bin", "haico");
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** A running `haico serve`; `env` adds settings (e.g. HAICO_AUTH=token). `pause()`
 * stops it keeping its data and port, `resume()` serves them again (an outage). */
export async function startBackend(env = {}) {
  if (!existsSync(join(frontendDir, "out", "index.html"))) throw new Error("build the studio first (npm run build)");
  const dataDir = mkdtempSync(join(tmpdir(), "haico-e2e-"));
  const port = await freePort();
  // CPython's allocator: under jemalloc `haico serve` would start twice (haico/process/allocator.py).
  const fullEnv = { ...process.env, HAICO_DATA_DIR: dataDir, HAICO_LLM: "offline", HAICO_ALLOCATOR: "system", ...env };
  delete fullEnv.HAICO_DATABASE_URL;
  const base = `http://127.0.0.1:${port}`;
  let proc = null;
  let log = "";
  const launch = async () => {
    const child = spawn(haico, ["serve", "--host", "127.0.0.1", "--port", String(port)], {
      cwd: join(repoDir, "backend"),
      env: fullEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc = child;
    child.stdout.on("data", (d) => (log += d));
    child.stderr.on("data", (d) => (log += d));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`haico serve exited:\n${log}`);
      try {
        const r = await fetch(`${base}/api/health`);
        if (r.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`haico serve did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const halt = async () => {
    const child = proc;
    proc = null;
    if (child === null || child.exitCode !== null) return;
    child.kill("SIGTERM");
    await new Promise((r) => {
      const t = setTimeout(() => (child.kill("SIGKILL"), r()), 8000);
      child.on("exit", () => (clearTimeout(t), r()));
    });
  };
  await launch();
  return {
    base,
    dataDir,
    log: () => log,
    /** `haico users create NAME` against this server's data; returns the token. */
    createUser(name) {
      const out = execFileSync(haico, ["users", "create", name], { cwd: join(repoDir, "backend"), env: fullEnv })
        .toString()
        .trim();
      return out.split("\n").at(-1).trim();
    },
    /** `haico users token NAME --rotate`: a new token; every old one stops working. */
    rotateToken(name) {
      const out = execFileSync(haico, ["users", "token", name, "--rotate"], {
        cwd: join(repoDir, "backend"),
        env: fullEnv,
      })
        .toString()
        .trim();
      return out.split("\n").at(-1).trim();
    },
    pause: halt,
    resume: launch,
    async stop() {
      await halt();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  // playwright-core gives every launch a fresh, empty temporary --user-data-dir.
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export async function screenshot(page, name) {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.waitForTimeout(400); // let the graph's re-framing animation settle
  await page.screenshot({ path });
  return path;
}
