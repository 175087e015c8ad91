// Big trees in the studio (issue "Big trees") against the real backend (SQLite,
// offline model) in Debian chromium: the minimap, breadcrumbs that jump, the sibling
// switcher and the choice it remembers (after a reload and in a second browser),
// branch summaries, the conversations filter, archive from a suggestion with undo,
// and no request repeated while a family loads. Screenshots at 1440 px and 390 px land
// in frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_SUMMARY_DEBOUNCE_SECONDS: "0" });
const T = 20_000;

/** Resolves once no request was added to `list` for a second (the event stream stays
 * open, so the page never reaches "networkidle"). */
async function quiet(list) {
  let seen = -1;
  while (seen !== list.length) {
    seen = list.length;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

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

/** Root R 1..4; branch A at 2 (A:3, A:4); branch B at 2 (B:3); branch C of A at 3 (C:4).
 * The head goes back to R:4. */
async function family(base, tag) {
  const root = (await api(base, "POST", "/conversations", { title: "Big study" })).thread_id;
  for (const k of [1, 2, 3, 4]) await send(base, root, `objective: step ${k}`);
  const a = (await api(base, "POST", `/conversations/${root}/branch`, { from_turn: 2 })).thread_id;
  await send(base, a, "todo: alpha");
  await send(base, a, "todo: alpha two");
  const b = (await api(base, "POST", `/conversations/${root}/branch`, { from_turn: 2 })).thread_id;
  await send(base, b, "todo: beta");
  await api(base, "PATCH", `/conversations/${b}`, { name: `needle-${tag}` });
  const c = (await api(base, "POST", `/conversations/${a}/branch`, { from_turn: 3 })).thread_id;
  await send(base, c, "todo: gamma");
  await api(base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:4` });
  return { root, a, b, c };
}

function switcher(page, nodeId) {
  return page.locator(`[data-testid="sibling-switcher"][data-node-id="${nodeId}"]`);
}

test("minimap, breadcrumbs, the sibling switcher and the path it remembers", async () => {
  const { server, chrome } = studio;
  const { root, a, b, c } = await family(server.base, "one");
  const context = await chrome.browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);

  // A load asks for each thing once.
  const requests = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/") && !r.url().includes("/events")) requests.push(`${r.method()} ${r.url()}`);
  });
  await page.goto(`${server.base}/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  await s.byTest("graph-minimap").waitFor({ state: "visible", timeout: T });
  await quiet(requests);
  const repeated = requests.filter((r, i) => requests.indexOf(r) !== i);
  assert.deepEqual(repeated, [], `requests repeated during the load: ${requests.join("\n")}`);

  // Breadcrumbs: the first step, the branch point (3 paths fork at step 2), the end.
  const crumbs = page.locator('[data-testid="breadcrumb-item"]');
  assert.deepEqual(await crumbs.evaluateAll((els) => els.map((e) => e.dataset.nodeId)), [
    `${root}:1`,
    `${root}:2`,
    `${root}:3`,
    `${root}:4`,
  ]);
  assert.match(await crumbs.nth(1).innerText(), /⎇3/);
  await crumbs.nth(0).click();
  await page.waitForSelector(`[data-testid="chat-message"][data-node-id="${root}:1"].flash`, { timeout: T });

  // The switcher at step 3: R:3, A:3, B:3.
  assert.match(await switcher(page, `${root}:3`).innerText(), /1\/3/);
  await switcher(page, `${root}:3`).locator('[data-testid="sibling-next"]').click();
  await s.expectHead(`${a}:4`);
  assert.match(await switcher(page, `${a}:3`).innerText(), /2\/3/);
  // Deeper: at step 4 of A, A:4 or C:4; choose C.
  await switcher(page, `${a}:4`).locator('[data-testid="sibling-next"]').click();
  await s.expectHead(`${c}:4`);
  await screenshot(page, "big-trees-switcher-1440");
  // Back to the main path, then to A again: the switcher goes down the path chosen last (C).
  await switcher(page, `${a}:3`).locator('[data-testid="sibling-prev"]').click();
  await s.expectHead(`${root}:4`);
  await switcher(page, `${root}:3`).locator('[data-testid="sibling-next"]').click();
  await s.expectHead(`${c}:4`);

  // A reload, and a second browser, open the family on the same path and agree on the choice.
  await page.reload();
  await s.expectHead(`${c}:4`);
  const other = await chrome.browser.newContext({ viewport: { width: 1440, height: 900 } });
  const second = await other.newPage();
  await second.goto(`${server.base}/?thread=${root}`);
  const s2 = new StudioPage(second);
  await s2.expectHead(`${c}:4`);
  // (the first page records its path as the head moves: wait until that landed)
  let chosen = null;
  for (const deadline = Date.now() + T; Date.now() < deadline;) {
    chosen = await api(server.base, "GET", `/conversations/${root}/chosen-path`);
    if (chosen.node_id === `${c}:4` && chosen.choices.length === 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(chosen.node_id, `${c}:4`);
  assert.deepEqual(chosen.choices.map((x) => x.child_node_id).sort(), [`${a}:3`, `${c}:4`].sort());
  await other.close();

  // Another client moves the family's head back to the main path while this user has the
  // family closed: the studio still opens on the path this user last looked at (C), not on
  // the shared head, in this browser and a fresh one; opening it records nothing new. (A
  // page left open follows the head, and what it then shows is the path last looked at.)
  await page.goto("about:blank");
  await api(server.base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:4` });
  const pathEnd = (p) =>
    p.waitForFunction(
      (n) => [...document.querySelectorAll('[data-testid="breadcrumb-item"]')].at(-1)?.dataset.nodeId === n,
      `${c}:4`,
      { timeout: T },
    );
  await page.goto(`${server.base}/?thread=${root}`);
  await pathEnd(page);
  await page.waitForSelector(`[data-testid="chat-message"][data-node-id="${c}:4"]`, { timeout: T });
  const third = await chrome.browser.newContext({ viewport: { width: 1440, height: 900 } });
  const fresh = await third.newPage();
  await fresh.goto(`${server.base}/?thread=${root}`);
  await pathEnd(fresh);
  await fresh.waitForSelector(`[data-testid="graph-node"][data-node-id="${root}:4"][data-head="true"]`, { timeout: T });
  assert.equal((await api(server.base, "GET", `/conversations/${root}/chosen-path`)).node_id, `${c}:4`);
  assert.equal((await api(server.base, "GET", `/conversations/${root}/history`)).head_turn_id, `${root}:4`);
  await third.close();
  assert.deepEqual(errors, []);
  await context.close();
  void b;
});

test("summaries, the conversations filter, archive from a suggestion and undo", async () => {
  const { server, chrome } = studio;
  const { root, b } = await family(server.base, "two");
  // a branch that changes nothing: suggested for archiving
  const idle = (await api(server.base, "POST", `/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await send(server.base, idle, "just thinking aloud");
  await api(server.base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:4` });
  const context = await chrome.browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(`${server.base}/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  await page.waitForSelector(`[data-testid="branch-summary"][data-thread-id="${idle}"]`, { timeout: T });

  // The conversations menu: a filter box; each branch by its name or summary.
  await s.byTest("history-menu-button").click();
  await s.byTest("conversation-filter").fill("needle-two");
  await s.expectCount("conversation-item", 1);
  assert.match(await s.byTest("conversation-item").innerText(), /needle-two/);
  await s.byTest("history-menu-button").click();

  // Tidy up: the idle branch is suggested; archive it in one click, then undo.
  await s.byTest("suggestions-button").click();
  const item = page.locator(`[data-testid="suggestion-item"][data-thread-id="${idle}"]`);
  await item.waitFor({ timeout: T });
  assert.match(await item.innerText(), /workspace is as the branch found it/);
  await screenshot(page, "big-trees-suggestions-1440");
  await item.locator('[data-testid="archive-button"]').click();
  await page.waitForSelector(`[data-testid="archived-note"][data-thread-id="${idle}"]`, { timeout: T });
  await item.waitFor({ state: "detached", timeout: T });
  let listed = await page.evaluate(async () => (await fetch("/api/conversations")).json());
  assert.ok(!listed.some((x) => x.thread_id === idle));
  await page.locator('[data-testid="archive-undo"]').click();
  await page.waitForSelector(`[data-testid="archived-note"][data-thread-id="${idle}"]`, { state: "detached" });
  listed = await page.evaluate(async () => (await fetch("/api/conversations")).json());
  assert.ok(listed.some((x) => x.thread_id === idle));
  void b;

  // A phone: the same page at 390 px, the graph framed again for it.
  await s.byTest("suggestions-button").click();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('[data-testid="graph-panel"]').scrollIntoViewIfNeeded();
  await screenshot(page, "big-trees-390");
  await context.close();
});

test("a card's buttons are at least 24 × 24 px on screen at every zoom that shows them", async () => {
  const { server, chrome } = studio;
  const { root } = await family(server.base, "three");
  const context = await chrome.browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(`${server.base}/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  const zoomNow = () =>
    page.evaluate(() => {
      const t = getComputedStyle(document.querySelector(".react-flow__viewport")).transform;
      return t === "none" ? 1 : new DOMMatrix(t).a;
    });
  /** Waits until the view stops moving; then the zoom, and every shown button's size. */
  async function measure() {
    let last = -1;
    let zoom = await zoomNow();
    while (zoom !== last) {
      last = zoom;
      await page.waitForTimeout(150);
      zoom = await zoomNow();
    }
    const sizes = await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="graph-node"] .card-btn')]
        .map((b) => b.getBoundingClientRect())
        .filter((r) => r.width > 0 && r.height > 0)
        .map((r) => [r.width, r.height]),
    );
    return { zoom, sizes };
  }
  const seen = [];
  // from the view the family opens with, zoomed in to the top and then all the way out
  for (let i = 0; i < 3; i++) await page.locator(".react-flow__controls-zoomin").click();
  for (let i = 0; i < 14; i++) {
    const { zoom, sizes } = await measure();
    seen.push([zoom, sizes.length]);
    if (zoom < 0.9 && zoom >= 0.7) await screenshot(page, "big-trees-buttons-zoom-0.8");
    if (zoom < 0.7 && zoom >= 0.35) await screenshot(page, "big-trees-buttons-compact");
    for (const [w, h] of sizes) assert.ok(w >= 24 && h >= 24, `a ${w} × ${h} px button at zoom ${zoom}`);
    await page.locator(".react-flow__controls-zoomout").click();
  }
  console.log(`zoom, buttons shown: ${JSON.stringify(seen)}`);
  // The zooms where the cards are full but smaller than life were measured, buttons shown;
  // so were compact cards with their fold buttons; and far enough out every button is
  // hidden (the step menu has them all, folding included).
  assert.ok(
    seen.some(([z, n]) => z < 0.9 && z >= 0.7 && n > 0),
    JSON.stringify(seen),
  );
  assert.ok(
    seen.some(([z, n]) => z < 0.7 && z >= 0.35 && n > 0),
    JSON.stringify(seen),
  );
  assert.ok(
    seen.some(([z, n]) => z < 0.3 && n === 0),
    JSON.stringify(seen),
  );
  await screenshot(page, "big-trees-zoomed-out-1440");
  await context.close();
});
