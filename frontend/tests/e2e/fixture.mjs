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
