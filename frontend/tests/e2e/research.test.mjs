// The research features in the studio (issue "Research features") against the real
// backend (SQLite, offline model) in Debian chromium: branch names edited in place,
// rejected decisions struck through, compare two cards, search and jump to a node,
// export then import, a fork's own steps. Screenshots land in frontend/test-results/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { openStudio, studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const VIEWPORT = { width: 1280, height: 720 };
const studio = studioFixture();

/** A family: main path 1, 2 (step 2 rejects a preference), and a branch 2.1 from step 1. */
async function buildFamily(s, page, branchText = "Trams are quiet too.") {
  const root = await s.newConversation();
  await s.send(
    "objective: Argue for bike lanes; prefer: short sentences; prefer: cite sources; " +
      "write: Cities are for people.; todo: outline",
  );
  await s.expectCount("preference-item", 2);
  await s.send("remove preference 1; write: Bikes are quiet.; artifact Notes: noise levels");
  await s.expectCount("preference-item", 1);
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
  await s.expectHead(`${root}:1`);
  await s.send(`objective: Argue formally for bike lanes; write: ${branchText}`);
  const branchNode = s.nodeByLabel("2.1");
  await branchNode.waitFor();
  const branchNodeId = await branchNode.getAttribute("data-node-id");
  return { root, branch: branchNodeId.split(":")[0], branchNodeId };
}

/** Show the main path again: the sibling switcher on step 2.1 goes back to step 2.
 * (Reopening the family from the menu would not do: it opens on the path chosen last.) */
async function showMainPath(s, page, root, branchNodeId) {
  await page
    .locator(`[data-testid="sibling-switcher"][data-node-id="${branchNodeId}"] [data-testid="sibling-prev"]`)
    .click();
  await s.expectHead(`${root}:2`);
}

test("branch names, rejected decisions and compare", async () => {
  const { context, page, errors, s } = await openStudio(studio, VIEWPORT);
  const { root, branch, branchNodeId } = await buildFamily(s, page);

  // The decision map: step 2 rejected "short sentences"; the card shows it struck
  // through on the displayed path, the workspace lists it only under "Rejected".
  await showMainPath(s, page, root, branchNodeId);
  const struck = s.node(`${root}:2`).locator('[data-testid="rejected-decision"]');
  await struck.waitFor();
  assert.match(await struck.innerText(), /short sentences/);
  assert.equal(await struck.locator("s").count(), 1);
  assert.equal(await s.node(`${root}:1`).locator('[data-testid="rejected-decision"]').count(), 0);
  await s.expectCount("preference-item", 1);
  await s.expectCount("rejected-item", 1);
  assert.match(await s.byTest("rejected-item").textContent(), /short sentences/);

  // Branch names: click the tag on the path's first card, type, Enter saves.
  const rootTag = page.locator(`[data-testid="branch-name"][data-thread-id="${root}"]`);
  const nameInput = () => page.locator(`[data-testid="branch-name-input"][data-thread-id="${root}"]`);
  const renamed = (name) =>
    page.waitForResponse(
      (r) =>
        r.url().endsWith(`/api/conversations/${root}`) &&
        r.request().method() === "PATCH" &&
        r.request().postDataJSON().name === name,
    );
  await rootTag.click();
  await nameInput().fill("car-free streets");
  const saved = renamed("car-free streets");
  await nameInput().press("Enter");
  assert.equal((await saved).status(), 200);
  await page.waitForFunction(
    (id) =>
      document
        .querySelector(`[data-testid="branch-name"][data-thread-id="${id}"]`)
        ?.textContent.includes("car-free streets"),
    root,
  );
  // Escape cancels.
  await rootTag.click();
  await nameInput().fill("never saved");
  await nameInput().press("Escape");
  await nameInput().waitFor({ state: "detached" });
  assert.match(await rootTag.innerText(), /car-free streets/);
  // An empty name clears it; then name it again.
  await rootTag.click();
  await nameInput().fill("   ");
  const cleared = renamed(null);
  await nameInput().press("Enter");
  assert.equal((await cleared).status(), 200);
  await page.waitForFunction(
    (id) => document.querySelector(`[data-testid="branch-name"][data-thread-id="${id}"]`)?.textContent === "+ name",
    root,
  );
  await rootTag.click();
  await nameInput().fill("main");
  await nameInput().press("Enter");
  await page.waitForFunction(
    (id) => document.querySelector(`[data-testid="branch-name"][data-thread-id="${id}"]`)?.textContent.includes("main"),
    root,
  );
  // The branch is named from its own first card (2.1); the history menu shows both.
  await page.locator(`[data-testid="branch-name"][data-thread-id="${branch}"]`).click();
  await page.locator(`[data-testid="branch-name-input"][data-thread-id="${branch}"]`).pressSequentially("formal tone");
  // typed: keys stay in the field
  await page.locator(`[data-testid="branch-name-input"][data-thread-id="${branch}"]`).press("Enter");
  await page.waitForFunction(
    (id) =>
      document.querySelector(`[data-testid="branch-name"][data-thread-id="${id}"]`)?.textContent.includes("formal"),
    branch,
  );
  await s.byTest("history-menu-button").click();
  const item = page.locator(`[data-testid="conversation-item"][data-thread-id="${branch}"]`);
  await item.waitFor();
  assert.match(await item.locator('[data-testid="conversation-name"]').innerText(), /formal tone/);
  assert.match(
    await page
      .locator(`[data-testid="conversation-item"][data-thread-id="${root}"] [data-testid="conversation-name"]`)
      .innerText(),
    /main/,
  );
  await screenshot(page, "research-01-names-in-history-menu");
  await s.byTest("history-menu-button").click();

  // Compare: ⇄ on step 2, then ⇄ on 2.1 (a sibling): the comparison opens.
  await s.node(`${root}:2`).locator('[data-testid="graph-node-compare"]').click();
  await s.byTest("compare-picking").waitFor();
  assert.equal(await s.node(`${root}:2`).getAttribute("data-picked"), "a");
  await s.node(branchNodeId).locator('[data-testid="graph-node-compare"]').click();
  const view = s.byTest("compare-view");
  await view.waitFor();
  await s.byTest("compare-diff").waitFor();
  assert.equal(await view.getAttribute("data-a"), `${root}:2`);
  assert.equal(await view.getAttribute("data-b"), branchNodeId);
  assert.equal(await s.byTest("compare-objective-before").innerText(), "Argue for bike lanes");
  assert.equal(await s.byTest("compare-objective-after").innerText(), "Argue formally for bike lanes");
  assert.equal(await s.byTest("compare-added-lines").innerText(), "+1");
  assert.equal(await s.byTest("compare-removed-lines").innerText(), "−1");
  const added = await page.locator('[data-testid="diff-line"][data-kind="add"]').allInnerTexts();
  const removed = await page.locator('[data-testid="diff-line"][data-kind="del"]').allInnerTexts();
  assert.ok(
    added.some((l) => l.includes("Trams are quiet too.")),
    `added lines: ${added}`,
  );
  assert.ok(
    removed.some((l) => l.includes("Bikes are quiet.")),
    `removed lines: ${removed}`,
  );
  assert.equal(await s.byTest("compare-ancestor").getAttribute("data-node-id"), `${root}:1`);
  // preferences matched by uid: "short sentences" is on the branch, not on step 2
  const prefAdded = page.locator('[data-testid="compare-item"][data-kind="add"][data-surface="preference"]');
  assert.match(await prefAdded.innerText(), /short sentences/);
  assert.equal(await page.locator('[data-testid="compare-artifact"][data-kind="del"]').count(), 1);
  // rejected per side, struck through
  assert.match(await s.byTest("compare-rejected-a").innerText(), /short sentences/);
  assert.equal(await s.byTest("compare-rejected-a").locator("s").count(), 1);
  assert.match(await s.byTest("compare-rejected-b").innerText(), /none/);
  await screenshot(page, "research-02-compare");

  // Swap the sides; then compare a card with the head; then a card with itself (no diff).
  await s.byTest("compare-swap").click();
  await page.waitForFunction(
    (b) => document.querySelector('[data-testid="compare-view"]')?.getAttribute("data-a") === b,
    branchNodeId,
  );
  await page.waitForFunction(() => document.querySelector('[data-testid="compare-added-lines"]')?.textContent === "+1");
  await s.byTest("compare-close").click();
  await view.waitFor({ state: "detached" });
  await s.byTest("workspace-objective").waitFor();
  await s.node(`${root}:1`).locator('[data-testid="graph-node-compare"]').click();
  await s.byTest("compare-with-head").click();
  await view.waitFor();
  assert.equal(await view.getAttribute("data-b"), `${root}:2`);
  await page.waitForFunction(() =>
    document.querySelector('[data-testid="compare-ancestor"]')?.getAttribute("data-node-id"),
  );
  assert.equal(await s.byTest("compare-ancestor").getAttribute("data-node-id"), `${root}:1`);
  await s.byTest("compare-close").click();
  // shift-click picks too
  await s.node(`${root}:1`).click({ modifiers: ["Shift"] });
  await s.byTest("compare-picking").waitFor();
  await s.node(`${root}:1`).click({ modifiers: ["Shift"] }); // unpick
  await s.byTest("compare-picking").waitFor({ state: "detached" });

  assert.deepEqual(errors, []);
  await context.close();
});

test("search across conversations and jump to a node off the displayed path", async () => {
  const { context, page, errors, s } = await openStudio(studio, VIEWPORT);
  const { root, branchNodeId } = await buildFamily(s, page, "Zeppelins hover quietly.");
  await showMainPath(s, page, root, branchNodeId); // the branch is now off the displayed path
  await s.expectActive(branchNodeId, false);
  // Another conversation on screen: the hit is in a different family.
  const other = await s.newConversation();
  await s.send("objective: Something unrelated");

  await s.byTest("search-input").fill("zeppelins hover");
  const hit = page.locator(`[data-testid="search-result"][data-node-id="${branchNodeId}"][data-kind="user"]`);
  await hit.waitFor();
  assert.match(await hit.innerText(), /Zeppelins hover/);
  assert.equal(await hit.locator("mark").count(), 2);
  const kinds = await page
    .locator('[data-testid="search-result"]')
    .evaluateAll((els) => els.map((e) => e.getAttribute("data-kind")));
  assert.ok(kinds.includes("document"), `kinds: ${kinds}`);
  await screenshot(page, "research-03-search");
  await hit.click();

  // The studio switches to the hit's family, frames and marks its card.
  await page.waitForURL((u) => u.searchParams.get("thread") === root);
  assert.notEqual(root, other);
  await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${branchNodeId}"][data-found="true"]`);
  await s.byTest("found-bar").waitFor();
  assert.match(await s.byTest("found-bar").innerText(), /step 2\.1/);
  await s.expectHead(`${root}:2`); // nothing restored yet
  await screenshot(page, "research-04-search-hit");
  // Restoring it on request: the head moves onto the hit.
  await s.byTest("found-restore").click();
  await s.expectHead(branchNodeId);
  await s.byTest("found-bar").waitFor({ state: "detached" });
  await page.waitForFunction(() =>
    document.querySelector('[data-testid="workspace-document"]')?.value.includes("Zeppelins hover quietly."),
  );

  // A hit in the family on screen needs no switch; Enter picks the first result.
  await s.byTest("search-input").fill("noise levels");
  await page.locator(`[data-testid="search-result"][data-node-id="${root}:2"]`).first().waitFor();
  await s.byTest("search-input").press("Enter");
  await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${root}:2"][data-found="true"]`);
  await s.byTest("found-dismiss").click();
  await s.byTest("found-bar").waitFor({ state: "detached" });
  // A hit is dropped when another family is opened.
  await s.byTest("search-input").fill("noise levels");
  await page.locator(`[data-testid="search-result"][data-node-id="${root}:2"]`).first().click();
  await s.byTest("found-bar").waitFor();
  await s.openFromHistory(other);
  await page.waitForURL((u) => u.searchParams.get("thread") === other);
  await s.byTest("found-bar").waitFor({ state: "detached" });
  // Nothing found.
  await s.byTest("search-input").fill("qwertyuiop");
  await page.getByText("Nothing found").waitFor();

  assert.deepEqual(errors, []);
  await context.close();
});

test("export a family, import it back and see the same graph; an invalid file is refused", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: VIEWPORT, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  const { root } = await buildFamily(s, page, "Ferries are slow.");
  await s.openFromHistory(root);
  await s.expectHead(`${root}:2`);
  const shape = () =>
    page
      .locator('[data-testid="graph-node"]')
      .evaluateAll((els) =>
        els.map((e) => `${e.getAttribute("data-label")}|${e.querySelector(".q")?.textContent ?? ""}`).sort(),
      );
  await s.expectCount("graph-node", 3);
  const before = await shape();

  // Export: a file download of GET …/export.
  await s.byTest("history-menu-button").click();
  const downloading = page.waitForEvent("download");
  await page.locator(`[data-testid="conversation-item"][data-thread-id="${root}"]`).hover();
  await page
    .locator(`li:has([data-testid="conversation-item"][data-thread-id="${root}"]) [data-testid="conversation-export"]`)
    .click();
  const download = await downloading;
  assert.match(download.suggestedFilename(), /^haico-.*\.json$/);
  const file = await download.path();
  const doc = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(doc.format, "haico.family");
  assert.equal(doc.root_thread_id, root);

  // Import it: a new family with the same graph opens.
  await s.byTest("history-menu-button").click();
  await s.byTest("import-input").setInputFiles(file);
  await page.waitForURL((u) => {
    const t = u.searchParams.get("thread");
    return t !== null && t !== root;
  });
  let imported = new URL(page.url()).searchParams.get("thread");
  await s.expectCount("graph-node", 3);
  await page.waitForFunction(
    () => document.querySelectorAll('[data-testid="graph-node"][data-head="true"]').length === 1,
  );
  assert.deepEqual(await shape(), before);
  assert.ok(!(await s.node(`${root}:1`).count()), "the import has its own node ids");
  await screenshot(page, "research-05-imported");

  // A slow upload shows its progress (the upload throttled to 16 KB/s).
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: 16 * 1024,
  });
  const padded = JSON.stringify(doc, null, 1) + " ".repeat(96 * 1024);
  await s.byTest("history-menu-button").click();
  await s
    .byTest("import-input")
    .setInputFiles({ name: "slow.json", mimeType: "application/json", buffer: Buffer.from(padded) });
  await s.byTest("import-progress").waitFor();
  assert.match(await s.byTest("import-progress").innerText(), /Importing slow\.json/);
  await screenshot(page, "research-07-import-progress");
  await page.waitForURL((u) => ![root, imported, null].includes(u.searchParams.get("thread")), { timeout: 30_000 });
  await s.byTest("import-progress").waitFor({ state: "detached" });
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: -1,
  });
  imported = new URL(page.url()).searchParams.get("thread");
  await s.expectCount("graph-node", 3);
  assert.deepEqual(await shape(), before);

  // A document from a future version, then one that is not JSON: 422, its message in the error banner, nothing created.
  const listed = async () => (await (await page.request.get(`${server.base}/api/conversations`)).json()).length;
  const count = await listed();
  await s.byTest("history-menu-button").click();
  await s.byTest("import-input").setInputFiles({
    name: "not-an-export.json",
    mimeType: "application/json",
    buffer: Buffer.from(JSON.stringify({ ...doc, version: 999 })), // from a future version
  });
  await s.byTest("error-banner").waitFor();
  const message = await s.byTest("error-banner").innerText();
  assert.ok(message.length > 10 && !/answered 422/.test(message), `the server's message is shown: ${message}`);
  await screenshot(page, "research-06-import-refused");
  assert.equal(await listed(), count);
  assert.equal(new URL(page.url()).searchParams.get("thread"), imported);
  await s.byTest("history-menu-button").click();
  await s
    .byTest("import-input")
    .setInputFiles({ name: "garbage.json", mimeType: "application/json", buffer: Buffer.from("{not json") });
  await page.waitForFunction((m) => {
    const t = document.querySelector('[data-testid="error-banner"]')?.textContent ?? "";
    return t.length > 0 && !t.includes(m);
  }, message);
  assert.equal(await listed(), count);

  assert.deepEqual(errors, []);
  await context.close();
});

// A fork owns only the steps after its fork point: the steps it inherited are shown in
// the chat but are no steps of its graph (nothing to restore there), and its first own
// step carries its path name.
test("a fork shows its inherited steps without restore points and names its own first step", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, VIEWPORT);
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
