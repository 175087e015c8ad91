// The studio fits narrower windows (a laptop's half screen, a tablet, a phone): no
// sideways scrolling, and the brand, the objective, the trajectory and the composer
// all on screen, whatever a long message does to the chat; the zoom buttons in the
// trajectory's panel.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();

const SIZES = [
  [1024, 640],
  [800, 900],
  [390, 800],
];

test("every part of the studio is reachable without scrolling sideways", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.newConversation();
  await s.send(
    "objective: A long objective that states the research question in some detail; " +
      "prefer: short sentences; todo: outline",
  );
  await s.send(`write: ${"Lorem ipsum dolor sit amet. ".repeat(40)}; artifact Notes: some notes`);
  for (const [width, height] of SIZES) {
    await page.setViewportSize({ width, height });
    await page.reload();
    await s.expectCount("graph-node", 2);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.equal(overflow, 0, `${width}px wide: the page is ${overflow}px wider than the window`);
    for (const id of ["conversation-title", "workspace-objective", "graph-panel", "message-input", "send-button"]) {
      const box = await s.byTest(id).boundingBox();
      assert.ok(box !== null, `${width}px: ${id} is not shown`);
      assert.ok(
        box.x >= 0 && box.x + box.width <= width + 0.5,
        `${width}px: ${id} spans ${box.x}..${box.x + box.width}`,
      );
    }
    // The trajectory's zoom buttons sit inside its panel (a stylesheet rule for the
    // page's right column once stretched them over the whole window).
    const panel = await s.byTest("graph-panel").boundingBox();
    const zoom = await page.locator('[data-testid="rf__controls"]').boundingBox();
    assert.ok(
      zoom.y >= panel.y && zoom.y + zoom.height <= panel.y + panel.height,
      `${width}px: zoom buttons at ${zoom.y}+${zoom.height}`,
    );
    const brand = await page.locator(".brand").boundingBox();
    assert.ok(brand.x >= 0, `${width}px: the brand starts at ${brand.x}`);
    await screenshot(page, `layout-${width}`);
  }
  await context.close();
});

test("the minimap covers no card once the view has fitted a short family", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1400, height: 860 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.newConversation();
  for (const text of ["objective: bridges", "todo: read", "todo: draft", "prefer: short"]) {
    await s.send(text);
  }
  await page.reload();
  await s.expectCount("graph-node", 4);
  await s.byTest("graph-minimap").waitFor({ state: "visible" });
  await page.waitForTimeout(600); // (the fit runs 80 ms after the cards, then animates)
  await screenshot(page, "layout-minimap-1400");
  const minimap = await s.byTest("graph-minimap").boundingBox();
  const cards = await s.byTest("graph-node").all();
  for (const card of cards) {
    const box = await card.boundingBox();
    const apart =
      box.x >= minimap.x + minimap.width ||
      box.x + box.width <= minimap.x ||
      box.y >= minimap.y + minimap.height ||
      box.y + box.height <= minimap.y;
    assert.ok(apart, `a card at ${JSON.stringify(box)} is under the minimap at ${JSON.stringify(minimap)}`);
  }
  await context.close();
});
