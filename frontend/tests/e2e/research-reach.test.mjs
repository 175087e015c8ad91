// Research features where they are needed (issue "the studio at research scale", points
// 5, 6, 8 and 9), against the real backend (SQLite, offline model, auth off) in Debian
// chromium: the analysis CSV from the conversations menu, the Share control under auth
// off, compare paths picked on the graph and named as the graph names steps, and the
// replay dialog (its fields and errors inside it, the merge steps it skips).
// Screenshots land in frontend/test-results/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { openStudio, studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";

const T = 20_000;
const studio = studioFixture();

async function api(base, method, path, body) {
  const r = await fetch(`${base}/api${path}`, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
  return text && r.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text;
}

const send = (base, thread, content) => api(base, "POST", `/conversations/${thread}/turns`, { content });

/** Root R 1..3; branch B at 1 (B:2 = 2.1, B:3 = 3.1). The head ends on `head`. */
async function twoPaths(base, head = "root") {
  const root = (await api(base, "POST", "/conversations", { title: "Two paths" })).thread_id;
  for (const k of [1, 2, 3]) await send(base, root, `objective: main ${k}`);
  const branch = (await api(base, "POST", `/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await send(base, branch, "objective: other 2");
  await send(base, branch, "todo: other 3");
  if (head === "root") await api(base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:3` });
  return { root, branch };
}

async function open(page, s, base, thread, cards) {
  await page.goto(`${base}/?thread=${thread}`);
  await s.expectCount("graph-node", cards);
}

/** A step's details panel: opened by a click on its card, or (where a click only
 * selects) by the card's details action or Enter on the selected card. */
async function openDetails(page, s, nodeId) {
  const card = s.node(nodeId);
  await s.clickSettled(card);
  const details = page.locator(`[data-testid="node-details"][data-node-id="${nodeId}"]`);
  try {
    await details.waitFor({ timeout: 1500 });
  } catch {
    const button = card.locator('[data-testid="graph-node-details"]');
    if ((await button.count()) > 0) await button.click();
    else await page.keyboard.press("Enter");
    await details.waitFor({ timeout: T });
  }
  return details;
}

test("the conversations menu downloads a family's analysis CSV, every branch named", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio);
  const { root, branch } = await twoPaths(server.base);
  await open(page, s, server.base, root, 5);

  await s.byTest("history-menu-button").click();
  const downloading = page.waitForEvent("download");
  await page
    .locator(
      `li:has([data-testid="conversation-item"][data-thread-id="${root}"]) [data-testid="conversation-export-csv"]`,
    )
    .click();
  const download = await downloading;
  assert.match(download.suggestedFilename(), /^haico-two-paths-\d{4}-\d{2}-\d{2}\.csv$/);
  const text = readFileSync(await download.path(), "utf8");
  const [header, ...lines] = text.trim().split("\r\n");
  const cols = header.split(",");
  const rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v])));
  assert.equal(rows.length, 5);
  const byNode = new Map(rows.map((r) => [r.node_id, r]));
  assert.equal(byNode.get(`${root}:2`).branch_name, "main");
  assert.equal(byNode.get(`${branch}:3`).label, "3.1");
  assert.equal(byNode.get(`${branch}:3`).branch_name, "from 2.1");
  assert.deepEqual(errors, []);
  await context.close();
});

test("with auth off the Share button says how to turn on token mode", async () => {
  const { server } = studio;
  for (const [width, height, name] of [
    [1440, 900, "1440"],
    [390, 844, "390"],
  ]) {
    const { context, page, errors, s } = await openStudio(studio, { width, height });
    const { root } = await twoPaths(server.base);
    await open(page, s, server.base, root, 5);
    const share = s.byTest("share-button");
    await share.waitFor({ timeout: T });
    await share.click();
    const dialog = s.byTest("share-dialog");
    await dialog.waitFor({ timeout: T });
    assert.equal(await dialog.getAttribute("data-mode"), "needs-token");
    const text = await dialog.innerText();
    assert.match(text, /token mode/);
    assert.match(text, /make run AUTH=token/);
    assert.match(text, /make user NAME=/);
    // the dialog fits the screen
    const box = await dialog.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= width, `share dialog ${JSON.stringify(box)} at ${width}px`);
    await screenshot(page, `reach-share-needs-token-${name}`);
    await s.byTest("share-close").click();
    await dialog.waitFor({ state: "detached", timeout: T });
    // and no request of the studio asked the server to share
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test("compare paths from the graph: two tips, labelled and numbered as the graph does", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  const { root, branch } = await twoPaths(server.base);
  await open(page, s, server.base, root, 5);

  await s.clickSettled(s.node(`${root}:3`).locator('[data-testid="graph-node-compare"]'));
  await s.byTest("compare-picking").waitFor({ timeout: T });
  await s.clickSettled(s.node(`${branch}:3`).locator('[data-testid="graph-node-compare"]'));
  await s.byTest("compare-view").waitFor({ timeout: T });
  await s.byTest("compare-paths").click();
  const dialog = s.byTest("paths-compare");
  await dialog.waitFor({ timeout: T });
  await dialog.locator('[data-testid="paths-pair"]').first().waitFor({ timeout: T });
  assert.equal(await dialog.locator('[data-testid="paths-pair"]').count(), 2);
  assert.deepEqual(await dialog.locator('[data-testid="paths-step"]').allInnerTexts(), [
    "step 2 · 2.1",
    "step 3 · 3.1",
  ]);
  assert.match(await dialog.locator('[data-testid="paths-fork"]').innerText(), /shared step 1$/);
  assert.match(
    await dialog.locator('[data-testid="paths-title"][data-side="a"]').innerText(),
    /Path A · step 3 \(main path\)/,
  );
  assert.match(
    await dialog.locator('[data-testid="paths-title"][data-side="b"]').innerText(),
    /Path B · step 3\.1 \(from 2\.1\)/,
  );
  assert.doesNotMatch(await dialog.innerText(), /th_[0-9a-f]/, "no raw id in the comparison");
  await screenshot(page, "reach-compare-paths-1440");
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, "reach-compare-paths-390");
  await dialog.locator('[data-testid="paths-close"]').click();
  assert.deepEqual(errors, []);
  await context.close();
});

test("the replay dialog keeps its fields and its errors inside, in step labels", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  // the head ends on 3.1, which does not descend from step 3
  const { root } = await twoPaths(server.base, "branch");
  await open(page, s, server.base, root, 5);

  const details = await openDetails(page, s, `${root}:3`);
  await details.locator('[data-testid="replay-open"]').click();
  const dialog = s.byTest("replay-dialog");
  await dialog.waitFor({ timeout: T });
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.waitForTimeout(200);
    const outer = await dialog.boundingBox();
    for (const id of ["replay-profile", "replay-to", "replay-repeats"]) {
      const box = await dialog.locator(`[data-testid="${id}"]`).boundingBox();
      assert.ok(
        box.x >= outer.x && box.x + box.width <= outer.x + outer.width + 0.5,
        `${id} ${JSON.stringify(box)} sticks out of the dialog ${JSON.stringify(outer)} at ${width}px`,
      );
    }
    assert.ok(outer.x >= 0 && outer.x + outer.width <= width, `the dialog fits ${width}px`);
    await screenshot(page, `reach-replay-dialog-${width}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });

  await dialog.locator('[data-testid="replay-to"]').selectOption("head");
  await dialog.locator('[data-testid="replay-start"]').click();
  const refused = dialog.locator('[data-testid="replay-error"]');
  await refused.waitFor({ timeout: T });
  const message = await refused.innerText();
  assert.doesNotMatch(message, /th_[0-9a-f]/, `a raw id in "${message}"`);
  assert.match(message, /step 3\.1/);
  assert.match(message, /step 3\b/);
  assert.equal(await s.byTest("error-banner").isVisible(), false, "no error behind the dialog");
  await screenshot(page, "reach-replay-refused-1440");
  assert.deepEqual(errors, []);
  await context.close();
});

test("a replay over a merge step says that it skips it", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  const { root, branch } = await twoPaths(server.base);
  // step 4 of the main path brings in 3.1; step 5 follows it
  await api(server.base, "POST", `/conversations/${root}/merge`, { source: `${branch}:3`, mode: "pick" });
  await send(server.base, root, "todo: after the merge");
  await open(page, s, server.base, root, 7);
  assert.equal(await s.node(`${root}:4`).getAttribute("data-kind"), "merge");

  const details = await openDetails(page, s, `${root}:2`);
  await details.locator('[data-testid="replay-open"]').click();
  const dialog = s.byTest("replay-dialog");
  await dialog.waitFor({ timeout: T });
  assert.equal(await dialog.locator('[data-testid="replay-skips"]').count(), 0, "step 2 alone holds no merge");
  await dialog.locator('[data-testid="replay-to"]').selectOption("head");
  const skips = dialog.locator('[data-testid="replay-skips"]');
  await skips.waitFor({ timeout: T });
  assert.match(await skips.innerText(), /^Step 4 brings in another path’s work/);
  assert.match(await skips.innerText(), /skipped/);
  await screenshot(page, "reach-replay-skips-merge");
  assert.deepEqual(errors, []);
  await context.close();
});

test("a bring-in keeps both sides of a document conflict", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  // two new paragraphs at the same place: the main path's and 2.1's
  const root = (await api(server.base, "POST", "/conversations", { title: "Two paragraphs" })).thread_id;
  await send(server.base, root, "objective: essay; write: Cycling is healthy.");
  const side = (await api(server.base, "POST", `/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await send(server.base, side, "write: Bikes are cheap.");
  await api(server.base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:1` });
  await send(server.base, root, "write: Lanes make cycling safe.");
  await open(page, s, server.base, root, 3);

  const dialog = s.byTest("merge-dialog");
  // (the first click can land while the view still settles onto the path: click again)
  for (let tries = 0; tries < 3 && !(await dialog.isVisible()); tries++) {
    await s.clickSettled(s.node(`${side}:2`).locator('[data-testid="graph-node-bring"]'));
    await dialog.waitFor({ timeout: 5000 }).catch(() => {});
  }
  await dialog.waitFor({ timeout: T });
  const conflict = dialog.locator('[data-testid="merge-change"][data-conflict="true"]');
  await conflict.waitFor({ timeout: T });
  assert.match(await conflict.getAttribute("data-change-id"), /^document:/);
  await conflict.locator('[data-testid="merge-choose-both"]').check();
  await screenshot(page, "reach-merge-keep-both");
  await s.byTest("merge-apply").click();
  await s.byTest("merge-result").waitFor({ timeout: T });
  await s.byTest("merge-close").click();
  await s.expectHead(`${root}:3`);
  await page.waitForFunction(
    () => /Bikes are cheap/.test(document.querySelector('[data-testid="workspace-document"]')?.value ?? ""),
    null,
    { timeout: T },
  );
  const text = await s.byTest("workspace-document").inputValue();
  assert.ok(text.indexOf("Lanes make cycling safe.") < text.indexOf("Bikes are cheap."), text);
  assert.ok(text.includes("Cycling is healthy."), text);
  assert.deepEqual(errors, []);
  await context.close();
});
