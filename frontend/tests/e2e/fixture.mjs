// The shared setup of the browser tests: one backend (SQLite, offline model) and one
// chromium per test file, started before its tests and stopped after them.
import { after, before } from "node:test";
import { launchBrowser, startBackend } from "./harness.mjs";

/** Registers the file's before/after hooks; `server` and `chrome` are set once the
 * tests run. `env` adds backend settings (e.g. HAICO_AUTH=token). */
export function studioFixture(env = {}) {
  const fixture = { server: null, chrome: null };
  before(async () => {
    fixture.server = await startBackend(env);
    fixture.chrome = await launchBrowser();
  });
  after(async () => {
    await fixture.chrome?.close();
    await fixture.server?.stop();
  });
  return fixture;
}

/** A new browser context and page on the studio's start page, with the page's uncaught
 * errors collected in `errors` and the page object `s`. */
export async function openStudio(fixture, viewport = { width: 1280, height: 800 }) {
  const { StudioPage } = await import("./studio-page.mjs");
  const context = await fixture.chrome.browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(fixture.server.base);
  return { context, page, errors, s };
}
