// What if in the studio against the real backend (SQLite, offline model) in Debian
// chromium: a profile made in the settings panel, "Replay with…" from the first step
// to the head with a progress bar, the replayed branch appearing in the graph, the
// aligned comparison of the two paths, and "Try 3 alternatives". Screenshots land in
// frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const VIEWPORT = { width: 1280, height: 800 };
const studio = studioFixture();

test("replay a path with another profile, watch it, compare the paths", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  const root = await s.newConversation();
  await s.send("objective: Plan a trip; todo: book");
  await s.send("how are we doing?");
  await s.send("todo: pack; write: Day one.");

  // The first step's details: the "what if" actions.
  await s.node(`${root}:1`).click();
  const details = s.byTest("node-details");
  await details.waitFor();
  await details.locator('[data-testid="replay-open"]').click();
  const dialog = s.byTest("replay-dialog");
  await dialog.waitFor();

  // A profile made in the small settings panel.
  await dialog.locator('[data-testid="profiles-open"]').click();
  const panel = dialog.locator('[data-testid="profiles-panel"]');
  await panel.locator('[data-testid="profile-name"]').fill("pilot");
  await panel.locator('[data-testid="profile-seed"]').fill("1");
  await panel.locator('[data-testid="profile-instructions"]').fill("Speak like a pilot.");
  await panel.locator('[data-testid="profile-create"]').click();
  await panel.locator('[data-testid="profile-item"]').nth(1).waitFor();
  const pilot = await panel.locator('[data-testid="profile-item"]').nth(1).getAttribute("data-profile-id");
  await dialog.locator('[data-testid="replay-profile"]').selectOption(pilot);
  await dialog.locator('[data-testid="replay-to"]').selectOption("head");
  await screenshot(page, "whatif-replay-dialog");

  // Replay: the progress bar runs to the end, and the branch shows in the graph.
  await dialog.locator('[data-testid="replay-start"]').click();
  const progress = dialog.locator('[data-testid="job-progress"]');
  await progress.waitFor();
  await page.waitForFunction(
    () => document.querySelector('[data-testid="job-progress"]')?.getAttribute("data-state") === "done",
    null,
    { timeout: 30_000 },
  );
  assert.match(await progress.innerText(), /3 of 3 steps · done/);
  assert.equal(await progress.locator('[role="progressbar"]').getAttribute("aria-valuenow"), "100");
  await screenshot(page, "whatif-job-done");
  const job = await page.evaluate(
    async (id) => {
      const r = await fetch(`/api/jobs/${id}`);
      return r.json();
    },
    await progress.getAttribute("data-job-id"),
  );
  const [branch] = job.thread_ids;
  await s.node(`${branch}:3`).waitFor({ state: "attached", timeout: 20_000 });

  // One click opens the aligned comparison: three pairs, replies differ, totals.
  await dialog.locator('[data-testid="replay-compare"]').click();
  const compare = s.byTest("paths-compare");
  await compare.waitFor();
  const pairs = compare.locator('[data-testid="paths-pair"]');
  await pairs.first().waitFor();
  assert.equal(await pairs.count(), 3);
  assert.equal(await pairs.nth(0).getAttribute("data-b"), `${branch}:1`);
  assert.match(await pairs.nth(1).locator('[data-testid="paths-reply-diff"]').innerText(), /\+ A quick check-in/);
  assert.match(await pairs.nth(0).locator('[data-testid="paths-workspace"]').innerText(), /the same on both paths/);
  assert.match(await compare.locator('[data-testid="paths-total"][data-side="b"]').innerText(), /3 steps/);
  await screenshot(page, "whatif-compare-paths");
  await compare.locator('[data-testid="paths-close"]').click();
  await dialog.locator('[data-testid="replay-close"]').click();

  // Try 3 alternatives of step 2: three siblings, and the step's switcher counts them.
  await s.node(`${root}:2`).dispatchEvent("click");
  await details.locator('[data-testid="try-alternatives"]').click();
  await page.waitForFunction(
    () =>
      document.querySelector('[data-testid="what-if"] [data-testid="job-progress"]')?.getAttribute("data-state") ===
      "done",
    null,
    { timeout: 30_000 },
  );
  await screenshot(page, "whatif-alternatives");
  const graph = await page.evaluate(async (id) => (await fetch(`/api/conversations/${id}/graph`)).json(), root);
  const siblings = graph.threads.filter((t) => t.branch_point_turn === 1 && t.parent_thread_id === root);
  assert.equal(siblings.length, 3);
  // Every card's step menu offers it as well (Enter on the selected step).
  await page.keyboard.press("Escape");
  await page.keyboard.press("g");
  await page.waitForSelector('[data-testid="graph-node"][data-head="true"][data-selected="true"]', { timeout: 20_000 });
  await page.keyboard.press("Enter");
  const menu = s.byTest("step-menu");
  await menu.waitFor();
  await menu.locator('[data-testid="try-alternatives"]').waitFor();
  await screenshot(page, "whatif-step-menu");
  assert.deepEqual(errors, []);
  await context.close();
});
