// The research ledger in the studio against the real backend (SQLite, offline model)
// in Debian chromium: a step's details panel with its provenance, notes added and
// deleted, code chips on cards and the code filter, a hand edit shown in the chat,
// the usage summary, and "Export this path" (Markdown and HTML). Screenshots land in
// frontend/test-results/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const VIEWPORT = { width: 1280, height: 800 };
const studio = studioFixture();

test("a step's provenance, notes, codes, hand edits and path export", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: VIEWPORT, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  const root = await s.newConversation();
  await s.send("objective: Argue for bike lanes; todo: outline; todo: sources");
  await s.send("write: Cities are for people.; done todo 1");

  // A hand edit at the tip: the chat says so, at the step it belongs to.
  const edited = page.waitForResponse((r) => r.url().endsWith(`/api/conversations/${root}/objective`));
  await s.byTest("workspace-objective").fill("Argue for protected bike lanes");
  await s.byTest("workspace-objective").blur();
  assert.equal((await edited).status(), 200);
  const handEdit = page.locator(`[data-testid="hand-edit"][data-node-id="${root}:2"]`);
  await handEdit.waitFor({ timeout: 20_000 });
  assert.equal(await handEdit.innerText(), "You changed the objective");
  await handEdit.scrollIntoViewIfNeeded();
  await screenshot(page, "ledger-hand-edit");

  // A card's details button: its details open with the provenance.
  await s.openDetails(`${root}:1`);
  const details = s.byTest("node-details");
  await details.waitFor();
  assert.equal(await details.getAttribute("data-node-id"), `${root}:1`);
  const provenance = details.locator('[data-testid="provenance"]');
  await provenance.waitFor();
  assert.match(await provenance.innerText(), /haico-offline \(offline\)/);
  assert.match(await provenance.innerText(), /\(estimated\)/);
  assert.match(await provenance.innerText(), /Tool calls\s+3/);

  // A note with codes: listed, and the card gets chips.
  await details.locator('[data-testid="note-input"]').fill("The agent set the frame here, not me.");
  await details.locator('[data-testid="note-codes"]').fill("framing, agent-led");
  await details.locator('[data-testid="note-submit"]').click();
  const item = details.locator('[data-testid="note-item"]');
  await item.waitFor();
  assert.match(await item.innerText(), /The agent set the frame here/);
  const chips = s.node(`${root}:1`).locator('[data-testid="code-chip"]');
  await chips.first().waitFor({ timeout: 20_000 });
  assert.deepEqual(await chips.allInnerTexts(), ["framing", "agent-led"]);
  await s.byTest("usage-summary").waitFor();
  assert.match(await s.byTest("usage-summary").innerText(), /main\s+2/);
  await screenshot(page, "ledger-node-details");

  // Show steps coded "framing": the other card is dimmed.
  await s.byTest("code-filter").selectOption("framing");
  await page.waitForFunction(
    (id) => getComputedStyle(document.querySelector(`[data-testid="graph-node"][data-node-id="${id}"]`)).opacity < 0.5,
    `${root}:2`,
  );
  assert.equal(await s.node(`${root}:1`).evaluate((el) => getComputedStyle(el).opacity), "1");
  await screenshot(page, "ledger-code-filter");
  await s.byTest("code-filter").selectOption("");

  // Export this path, both formats.
  for (const [format, marker] of [
    ["md", "# "],
    ["html", "<!doctype html>"],
  ]) {
    const download = page.waitForEvent("download");
    await details.locator(`[data-testid="path-export-${format}"]`).click();
    const file = await (await download).path();
    const text = readFileSync(file, "utf8");
    assert.ok(text.startsWith(marker), text.slice(0, 40));
    assert.match(text, /Argue for bike lanes/);
    assert.match(text, /The agent set the frame here/);
    if (format === "html") {
      const doc = await context.newPage();
      await doc.setContent(text);
      await screenshot(doc, "ledger-path-html");
      await doc.close();
    }
  }

  // Delete the note: gone from the panel and from the card.
  await item.locator('[data-testid="note-delete"]').click();
  await s.expectCount("note-item", 0);
  await s.expectCount("code-chip", 0);
  assert.deepEqual(errors, []);
  await context.close();
});
