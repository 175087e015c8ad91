// A fork owns only the steps after its fork point: the steps it inherited are shown in
// the chat but are no steps of its graph (nothing to restore there), and its first own
// step carries its path name.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();

test("a fork shows its inherited steps without restore points and names its own first step", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  const source = await s.newConversation();
  await s.send("objective: Argue for bike lanes");
  await s.send("todo: outline");
  const res = await fetch(`${server.base}/api/conversations/${source}/fork`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ from_turn: 2 }),
  });
  assert.equal(res.status, 201);
  const fork = (await res.json()).thread_id;

  await page.goto(`${server.base}/?thread=${fork}`);
  await s.expectStepLabels(["1", "2"]);
  await s.expectCount("restore-divider", 0);
  await s.send("prefer: short sentences");
  await s.expectStepLabels(["1", "2", "3"]);
  await s.expectHead(`${fork}:3`);
  // The inherited steps are the source family's: no divider restores them from here.
  await s.expectCount("restore-divider", 0);
  await page.locator(`[data-testid="branch-name"][data-thread-id="${fork}"]`).waitFor({ timeout: 20_000 });
  await screenshot(page, "fork-own-steps");
  assert.deepEqual(errors, []);
  await context.close();
});
