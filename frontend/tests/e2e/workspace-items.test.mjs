// Preferences and todos share one row (components/app/item-row.tsx): both move up and
// down (todos had no "move down"), and both can be removed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();

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
