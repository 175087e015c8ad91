// Accessibility in CI: axe (@axe-core/playwright) on the studio's main views (the
// landing page, a conversation, a restore, compare, search, the conversations menu)
// at 1440 px and at 390 px; any serious or critical violation fails the test, with
// the rule, the impact and the elements named.
import AxeBuilder from "@axe-core/playwright";
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();
const T = 20_000;
const SIZES = [
  { name: "1440", options: { viewport: { width: 1440, height: 900 } } },
  { name: "390", options: { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true } },
];

async function violations(page, view) {
  await page.waitForTimeout(300); // the graph's framing animation settles
  const result = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"])
    .analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${view}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes
          .map((n) => n.target.join(" "))
          .slice(0, 4)
          .join(", ")}`,
    );
}

test("axe finds no serious or critical violation on the main views at 1440 px and 390 px", async () => {
  const { server, chrome } = studio;
  // one family, built once through the studio
  const setup = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const s0 = new StudioPage(await setup.newPage());
  await s0.page.goto(server.base);
  const root = await s0.newConversation();
  await s0.send("objective: Accessible essay; prefer: plain words; todo: outline");
  await s0.send("write: A first paragraph.; todo: draft");
  await s0.send("todo: revise");
  await setup.close();

  const found = [];
  for (const { name, options } of SIZES) {
    const context = await chrome.browser.newContext(options);
    const page = await context.newPage();
    const s = new StudioPage(page);
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Co-construction studio" }).waitFor({ timeout: T });
    found.push(...(await violations(page, `${name} landing`)));

    await page.goto(`${server.base}/?thread=${root}`);
    await s.expectCount("graph-node", 3);
    found.push(...(await violations(page, `${name} conversation`)));

    await s.byTest("history-menu-button").click();
    await s.byTest("history-menu").waitFor();
    found.push(...(await violations(page, `${name} menu`)));
    await s.byTest("history-menu-button").click();

    await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
    await s.byTest("restore-banner").waitFor({ timeout: T });
    found.push(...(await violations(page, `${name} restore`)));
    await s.byTest("restore-back").click();
    await s.byTest("restore-banner").waitFor({ state: "detached", timeout: T });

    // compare the newest step with the one before (by keys: on a phone the cards
    // before the newest are off the canvas)
    await page.keyboard.press("g");
    await page.waitForSelector(`[data-node-id="${root}:3"][data-selected="true"]`, { timeout: T });
    await page.keyboard.press("x");
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector(`[data-node-id="${root}:2"][data-selected="true"]`, { timeout: T });
    await page.keyboard.press("x");
    await s.byTest("compare-view").waitFor({ timeout: T });
    found.push(...(await violations(page, `${name} compare`)));
    await s.byTest("compare-close").click();

    await s.byTest("search-input").fill("revise");
    await page.locator('[data-testid="search-result"]').first().waitFor({ timeout: T });
    found.push(...(await violations(page, `${name} search`)));
    await context.close();
  }
  assert.deepEqual(found, []);
});
