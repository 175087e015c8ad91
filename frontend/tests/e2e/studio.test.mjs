// The studio walkthrough against the real backend (SQLite, offline model) in Debian
// chromium at 1280×720. Screenshots land in frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const VIEWPORT = { width: 1280, height: 720 };
const studio = studioFixture();

test("walkthrough: create, three turns, restore, confirm, branch 3.1, history menu, live second tab", async () => {
  const { server, chrome } = studio;
  const started = Date.now();
  const context = await chrome.browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);

  // 1. Create a conversation.
  await page.goto(server.base);
  const root = await s.newConversation();
  await s.byTest("graph-panel").waitFor();

  // 2. Three turns with the offline model; the tool edits land in the workspace.
  await s.send("objective: Argue for bike lanes; prefer: short sentences; todo: outline the argument");
  await s.expectObjective("Argue for bike lanes");
  await s.expectCount("preference-item", 1);
  await s.expectCount("todo-item", 1);
  assert.ok((await page.locator('[data-testid="tool-activity"] li').count()) >= 3, "tool activity is shown");
  await s.send("write: Cities are for people.; subtodo: find statistics");
  await page.waitForFunction(() =>
    document.querySelector('[data-testid="workspace-document"]')?.value.includes("Cities are for people."),
  );
  await s.expectCount("todo-item", 2);
  await s.send("objective: Argue formally for bike lanes; prefer: cite sources; artifact Sources: city report 2024");
  await s.expectObjective("Argue formally for bike lanes");
  await s.expectCount("preference-item", 2);
  await s.expectCount("artifact-item", 1);
  await s.expectCount("graph-node", 3);
  await s.expectStepLabels(["1", "2", "3"]);
  await s.expectHead(`${root}:3`);
  // Artifacts open to show their content.
  await s.byTest("artifact-item").locator("button").click();
  await page.waitForFunction(() =>
    document.querySelector('[data-testid="artifact-content"]')?.textContent?.includes("city report 2024"),
  );

  // 3. Restore step 2 (its checkpoint divider) and see the old workspace.
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:2"]`).click();
  await s.expectObjective("Argue for bike lanes");
  await s.expectCount("preference-item", 1);
  await s.expectCount("artifact-item", 0);
  await s.expectHead(`${root}:2`);
  await s.expectStepLabels(["1", "2"]);
  // (the graph's answer, which says which cards are on the path, may come a moment after the head's)
  await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${root}:3"][data-active="false"]`, {
    timeout: 30_000,
  });
  await screenshot(page, "03-restored-step-2");

  // 4. Edit the preview, try to switch away: the server refuses, the dialog asks.
  const saved = page.waitForResponse((r) => r.url().endsWith("/objective") && r.request().method() === "PUT");
  await s.byTest("workspace-objective").fill("Argue for protected bike lanes");
  await s.byTest("workspace-objective").press("Enter");
  assert.equal((await saved).status(), 200);
  await s.node(`${root}:3`).dblclick();
  await s.byTest("confirm-dialog").waitFor();
  const dialogText = await s.byTest("confirm-dialog").innerText();
  assert.match(dialogText, /discard/i);
  assert.match(dialogText, /objective/);
  await screenshot(page, "04-confirm-dialog");
  await s.byTest("confirm-cancel").click();
  await s.byTest("confirm-dialog").waitFor({ state: "hidden" });
  await s.expectHead(`${root}:2`);
  assert.equal(await s.objective(), "Argue for protected bike lanes");

  // 5. Send from step 2: a new branch labelled 3.1, the original path intact.
  await s.send("todo: survey cyclists");
  await s.expectCount("graph-node", 4);
  const branchNode = s.nodeByLabel("3.1");
  await branchNode.waitFor();
  const branchNodeId = await branchNode.getAttribute("data-node-id");
  const branch = branchNodeId.split(":")[0];
  assert.notEqual(branch, root);
  await s.expectActive(branchNodeId, true);
  assert.equal(await branchNode.getAttribute("data-head"), "true");
  for (const [k, label] of [
    [1, "1"],
    [2, "2"],
    [3, "3"],
  ]) {
    assert.equal(await s.node(`${root}:${k}`).getAttribute("data-label"), label);
  }
  await s.expectActive(`${root}:3`, false);
  await s.expectStepLabels(["1", "2", "3.1"]);
  await s.expectObjective("Argue for protected bike lanes"); // the preview edit went onto the branch
  await s.expectCount("todo-item", 3);
  await screenshot(page, "05-branched-graph");

  // 6. The history menu: open the main path (offshoot chip at step 2), then the branch.
  await s.openFromHistory(root);
  await s.expectHead(`${root}:3`);
  await s.expectObjective("Argue formally for bike lanes");
  await s.expectStepLabels(["1", "2", "3"]);
  const chip = page.locator(`[data-testid="offshoot-chip"][data-thread-id="${branch}"]`);
  await chip.waitFor();
  assert.match(await chip.innerText(), /3\.1/);
  // Clicking a step on the displayed path scrolls to its message and flashes it.
  await s.node(`${root}:1`).click();
  await page.waitForSelector(`[data-role="user"][data-node-id="${root}:1"].flash`);
  const itemText = await s.openFromHistory(branch, () => screenshot(page, "06-history-menu"));
  assert.match(itemText, /branched at step 2/);
  await s.expectHead(branchNodeId);
  await s.expectObjective("Argue for protected bike lanes");
  await s.expectStepLabels(["1", "2", "3.1"]);

  // 7. A second browser context follows the family live: a turn and a checkout made
  //    in the first one show up without a reload.
  const other = await chrome.browser.newContext({ viewport: VIEWPORT });
  const page2 = await other.newPage();
  page2.on("pageerror", (e) => errors.push(String(e)));
  const s2 = new StudioPage(page2);
  await page2.goto(`${server.base}/?thread=${branch}`);
  await s2.expectCount("graph-node", 4);
  await s2.expectHead(branchNodeId);
  await s.send("prefer: live sync works");
  await s2.expectCount("graph-node", 5);
  await s2.expectHead(`${branch}:4`);
  await page2.waitForFunction(() =>
    [...document.querySelectorAll('[data-testid="preference-item"]')].some((e) =>
      e.textContent.includes("live sync works"),
    ),
  );
  await s2.expectCount("chat-message", 8, '[data-role="user"], [data-testid="chat-message"][data-role="assistant"]');
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
  await s.expectHead(`${root}:1`);
  await s2.expectHead(`${root}:1`);
  await s2.expectObjective("Argue for bike lanes");
  await screenshot(page2, "07-second-tab-live");

  // 8. A slow turn shows progress, blocks send, reports a refused checkout in the
  //    error banner, and can be stopped; the stopped turn stays a node.
  await s.byTest("message-input").fill("wait: 20");
  await s.byTest("send-button").click();
  await s.byTest("turn-status").waitFor();
  assert.equal(await s.byTest("send-button").isDisabled(), true);
  await s2.byTest("turn-status").waitFor(); // the other tab sees the turn running too
  await s.node(`${root}:2`).dblclick();
  await s.byTest("error-banner").waitFor();
  assert.match(await s.byTest("error-banner").innerText(), /turn/i);
  await s.byTest("stop-button").click();
  await s.waitIdle();
  await page.waitForSelector('[data-testid="chat-message"][data-role="assistant"][data-state="cancelled"]', {
    timeout: 20_000,
  });
  await page.waitForSelector('[data-testid="graph-node"][data-state="cancelled"][data-head="true"]', {
    timeout: 20_000,
  });
  await s2.byTest("turn-status").waitFor({ state: "hidden", timeout: 20_000 });

  // 9. "Discard" in the confirm dialog retries the checkout with force.
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
  await s.expectHead(`${root}:1`);
  const edited = page.waitForResponse((r) => r.url().endsWith("/objective") && r.request().method() === "PUT");
  await s.byTest("workspace-objective").fill("Throwaway edit");
  await s.byTest("workspace-objective").press("Enter");
  await edited;
  await s.node(`${root}:3`).dblclick();
  await s.byTest("confirm-dialog").waitFor();
  await s.byTest("confirm-discard").click();
  await s.byTest("confirm-dialog").waitFor({ state: "hidden" });
  await s.expectHead(`${root}:3`);
  await s.expectObjective("Argue formally for bike lanes");

  assert.deepEqual(errors, []);
  await other.close();
  await context.close();
  console.log(`walkthrough: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

// Preferences and todos share one row (features/workspace/components/item-row.tsx): both move up and
// down (todos had no "move down"), and both can be removed.
async function texts(page, kind) {
  return page.locator(`[data-testid="${kind}-item"] .item-text`).allInnerTexts();
}

async function expectTexts(page, kind, want) {
  await page.waitForFunction(
    ([k, w]) =>
      JSON.stringify(
        [...document.querySelectorAll(`[data-testid="${k}-item"] .item-text`)].map((e) => e.textContent),
      ) === JSON.stringify(w),
    [kind, want],
    { timeout: 20_000 },
  );
}

test("todos and preferences move up and down, and are removed, from the same row", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.newConversation();
  await s.send("todo: first; todo: second; todo: third; prefer: alpha; prefer: beta");
  await expectTexts(page, "todo", ["first", "second", "third"]);
  await expectTexts(page, "preference", ["alpha", "beta"]);

  const row = (kind, i) => page.locator(`[data-testid="${kind}-item"]`).nth(i);
  const press = async (kind, i, action) => {
    await row(kind, i).hover();
    await row(kind, i).locator(`[data-testid="${kind}-${action}"]`).click();
  };
  // The last row cannot move down, the first cannot move up.
  assert.equal(await row("todo", 2).locator('[data-testid="todo-move-down"]').isDisabled(), true);
  assert.equal(await row("todo", 0).locator('[data-testid="todo-move-up"]').isDisabled(), true);

  await row("todo", 1).hover();
  await screenshot(page, "workspace-items-hover");
  await press("todo", 0, "move-down");
  await expectTexts(page, "todo", ["second", "first", "third"]);
  await press("todo", 1, "move-down");
  await expectTexts(page, "todo", ["second", "third", "first"]);
  await press("todo", 2, "move-up");
  await expectTexts(page, "todo", ["second", "first", "third"]);
  await press("preference", 0, "move-down");
  await expectTexts(page, "preference", ["beta", "alpha"]);
  await press("todo", 0, "remove");
  await expectTexts(page, "todo", ["first", "third"]);
  await press("preference", 1, "remove");
  await expectTexts(page, "preference", ["beta"]);

  // The order is the server's: a reload shows it.
  await page.reload();
  await expectTexts(page, "todo", ["first", "third"]);
  assert.deepEqual(await texts(page, "preference"), ["beta"]);
  await context.close();
});
