// What if in the studio against the real backend (SQLite, offline model) in Debian
// chromium: a profile made in the settings panel, "Replay with…" from the first step
// to the head with a progress bar, the replayed branch appearing in the graph, the
// aligned comparison of the two paths, and "Try 3 alternatives"; then a range of two
// cards picked on the graph (a refused end says why), the server's refusal shown in
// the dialog, and "Try 3 alternatives" as one click on a card. Screenshots land in
// frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openStudio, studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";

const studio = studioFixture();

/** A new page on a new conversation of three steps (the page's errors collected). */
async function threeSteps() {
  const { context, page, errors, s } = await openStudio(studio);
  const root = await s.newConversation();
  await s.send("objective: Plan a trip; todo: book");
  await s.send("how are we doing?");
  await s.send("todo: pack; write: Day one.");
  return { context, page, errors, s, root };
}

test("replay a path with another profile, watch it, compare the paths", async () => {
  const { context, page, errors, s, root } = await threeSteps();

  // The first step's details: the "what if" actions.
  await s.openDetails(`${root}:1`);
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
  await s.node(`${root}:2`).locator('[data-testid="graph-node-details"]').dispatchEvent("click");
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

/** Waits until the `job-progress` inside `scope` (a CSS selector) has ended `done`. */
async function jobDone(page, scope) {
  await page.waitForFunction(
    (sel) => document.querySelector(`${sel} [data-testid="job-progress"]`)?.getAttribute("data-state") === "done",
    scope,
    { timeout: 30_000 },
  );
}

test("one click on a card tries 3 alternatives; a range of two cards replays", async () => {
  const { context, page, errors, s, root } = await threeSteps();
  const graphOf = () => page.evaluate(async (id) => (await fetch(`/api/conversations/${id}/graph`)).json(), root);

  // One click on step 2's card: three sibling answers to its message, the progress above the graph.
  const tryButton = s.node(`${root}:2`).locator('[data-testid="graph-node-try-alternatives"]');
  await tryButton.waitFor();
  const box = await tryButton.boundingBox();
  assert.ok(box.width >= 24 && box.height >= 24, `a ${box.width} × ${box.height} px button`);
  assert.equal(await s.node(`${root}:1`).locator('[data-testid="graph-node-try-alternatives"]').count(), 1);
  await screenshot(page, "whatif-card-button");
  await tryButton.click();
  const alternatives = s.byTest("alternatives-progress");
  await alternatives.waitFor();
  await jobDone(page, '[data-testid="alternatives-progress"]');
  assert.match(await alternatives.innerText(), /3 alternatives of step 2/);
  assert.match(await alternatives.innerText(), /3 of 3 steps · done/);
  const siblings = (await graphOf()).threads.filter((t) => t.branch_point_turn === 1 && t.parent_thread_id === root);
  assert.equal(siblings.length, 3);
  for (const t of siblings) await s.node(`${t.thread_id}:2`).waitFor({ state: "attached", timeout: 20_000 });
  await screenshot(page, "whatif-card-alternatives");
  // each alternative opens in the aligned comparison, named as the graph names steps
  assert.equal(await alternatives.locator('[data-testid="alternatives-compare"]').count(), 3);
  await alternatives.locator('[data-testid="alternatives-compare"]').first().click();
  const paths = s.byTest("paths-compare");
  await paths.waitFor();
  await paths.locator('[data-testid="paths-pair"]').first().waitFor();
  assert.match(await paths.locator('[data-testid="paths-step"]').first().innerText(), /^step 2 · 2\.\d$/);
  assert.doesNotMatch(await paths.innerText(), /th_[0-9a-f]/);
  await paths.locator('[data-testid="paths-close"]').click();
  await alternatives.locator('[data-testid="alternatives-close"]').click();
  await alternatives.waitFor({ state: "detached" });

  // A range of two cards: step 2's "Replay with…" → "a step I pick on the graph…".
  await s.node(`${root}:2`).locator('[data-testid="graph-node-details"]').dispatchEvent("click");
  const details = s.byTest("node-details");
  await page.waitForSelector(`[data-testid="node-details"][data-node-id="${root}:2"]`);
  await details.locator('[data-testid="replay-open"]').click();
  await s.byTest("replay-dialog").waitFor();
  await s.byTest("replay-to").selectOption("pick");
  await s.byTest("replay-dialog").waitFor({ state: "detached" });
  const bar = s.byTest("replay-range-bar");
  await bar.waitFor();
  assert.equal(await bar.getAttribute("data-from"), `${root}:2`);
  // An end off the start's paths is refused, with why; picking goes on.
  const sibling = siblings[0].thread_id;
  await s.node(`${sibling}:2`).dispatchEvent("click");
  const refusal = bar.locator('[data-testid="replay-range-error"]');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /is on another path: pick a later step of a path through 2/);
  await screenshot(page, "whatif-range-refused");
  await s.node(`${root}:1`).dispatchEvent("click");
  await page.waitForFunction(
    () => /comes before step 2/.test(document.querySelector('[data-testid="replay-range-error"]')?.textContent ?? ""),
    null,
    { timeout: 20_000 },
  );
  // The second card ends the range: the dialog shows it.
  await s.node(`${root}:3`).dispatchEvent("click");
  const dialog = s.byTest("replay-dialog");
  await dialog.waitFor();
  await bar.waitFor({ state: "detached" });
  assert.equal(await dialog.getAttribute("data-from"), `${root}:2`);
  assert.equal(await dialog.getAttribute("data-to"), `${root}:3`);
  assert.match(await dialog.locator("h2").innerText(), /Replay steps 2 to 3/);
  assert.match(await dialog.locator('[data-testid="replay-range"]').innerText(), /step 3/);
  await screenshot(page, "whatif-range-dialog");
  await dialog.locator('[data-testid="replay-start"]').click();
  await jobDone(page, '[data-testid="replay-dialog"]');
  const progress = dialog.locator('[data-testid="job-progress"]');
  assert.match(await progress.innerText(), /2 of 2 steps · done/);
  const job = await page.evaluate(
    async (id) => (await fetch(`/api/jobs/${id}`)).json(),
    await progress.getAttribute("data-job-id"),
  );
  const [branch] = job.thread_ids;
  const made = (await graphOf()).threads.find((t) => t.thread_id === branch);
  assert.equal(made.parent_thread_id, root);
  assert.equal(made.branch_point_turn, 1);
  assert.match(made.reason, /^replay with .* of turns 2–3$/);
  await s.node(`${branch}:3`).waitFor({ state: "attached", timeout: 20_000 });
  await dialog.locator('[data-testid="replay-compare"]').click();
  const compare = s.byTest("paths-compare");
  await compare.waitFor();
  await compare.locator('[data-testid="paths-pair"]').first().waitFor();
  assert.equal(await compare.locator('[data-testid="paths-pair"]').count(), 2);
  assert.equal(await compare.locator('[data-testid="paths-pair"]').nth(1).getAttribute("data-b"), `${branch}:3`);
  await compare.locator('[data-testid="paths-close"]').click();
  await dialog.locator('[data-testid="replay-close"]').click();
  await dialog.waitFor({ state: "detached" });

  // The server's refusal shows in the dialog: from step 2 to the head, which is now on
  // a branch made at step 1 (the head moved with the replays), is not a range.
  await s.node(`${root}:2`).locator('[data-testid="graph-node-details"]').dispatchEvent("click");
  await page.waitForSelector(`[data-testid="node-details"][data-node-id="${root}:2"]`);
  await details.locator('[data-testid="replay-open"]').click();
  await dialog.waitFor();
  await dialog.locator('[data-testid="replay-to"]').selectOption("head");
  await dialog.locator('[data-testid="replay-start"]').click();
  const refused = dialog.locator('[data-testid="replay-error"]');
  await refused.waitFor();
  // in the studio's words: step labels, never the server's ids
  assert.match(await refused.innerText(), /^step [\d.]+ does not descend from step 2$/);
  await screenshot(page, "whatif-range-server-refusal");
  await dialog.locator('[data-testid="replay-close"]').click();

  // A card and "the head": from step 1 to the head (the replayed branch's last step).
  const head = await s.headNodeId();
  await s.node(`${root}:1`).locator('[data-testid="graph-node-details"]').dispatchEvent("click");
  await page.waitForSelector(`[data-testid="node-details"][data-node-id="${root}:1"]`);
  await details.locator('[data-testid="replay-open"]').click();
  await s.byTest("replay-to").selectOption("pick");
  await bar.locator('[data-testid="replay-range-head"]').click();
  await dialog.waitFor();
  assert.equal(await dialog.getAttribute("data-from"), `${root}:1`);
  assert.equal(await dialog.getAttribute("data-to"), head);
  await dialog.locator('[data-testid="replay-close"]').click();
  await dialog.waitFor({ state: "detached" });

  // The step menu starts a range too (Enter on the selected step), and Escape drops it.
  await page.keyboard.press("Escape");
  await page.keyboard.press("g");
  await page.waitForSelector('[data-testid="graph-node"][data-head="true"][data-selected="true"]', { timeout: 20_000 });
  await page.keyboard.press("Enter");
  const menu = s.byTest("step-menu");
  await menu.waitFor();
  const headId = await menu.getAttribute("data-node-id");
  await menu.locator('[data-testid="step-menu-replay"]').click();
  await bar.waitFor();
  assert.equal(await bar.getAttribute("data-from"), headId);
  await page.keyboard.press("Escape");
  await bar.waitFor({ state: "detached" });
  assert.deepEqual(errors, []);
  await context.close();
});
