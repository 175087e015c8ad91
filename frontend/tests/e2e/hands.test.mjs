// The studio for every hand (docs/keys.md): a walkthrough by keyboard alone with no
// mouse event, the keys to the message box, every control at 390 px at least
// 24 × 24 px, the zoom buttons off the cards, one scroll area, touch hints and the
// long press, the way back from a restore across a reload, titles; screenshots of
// every view at 1440 px and 390 px land in frontend/test-results/hands-*.png.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();
const WIDE = { width: 1440, height: 900 };
const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 1 };
const T = 20_000;

/** Counts every pointer and mouse press the page sees (a keyboard "click" is neither). */
function countPresses(page) {
  return page.addInitScript(() => {
    window.__presses = 0;
    for (const type of ["pointerdown", "mousedown", "pointerup", "mouseup", "touchstart"])
      window.addEventListener(type, () => (window.__presses += 1), true);
  });
}

const focused = (page) => page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? null);

async function typeAndSend(page, s, text) {
  const before = await s.assistantMessages().count();
  await page.keyboard.press("c");
  assert.equal(await focused(page), "message-input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (n) => document.querySelectorAll('[data-testid="chat-message"][data-role="assistant"]').length > n,
    before,
    { timeout: T },
  );
  await s.waitIdle();
  await page.keyboard.press("Escape"); // leave the composer: the page's keys work again
}

const selected = (page) =>
  page.evaluate(() => document.querySelector('[data-testid="graph-node"][data-selected="true"]')?.dataset.nodeId);

/** Waits until the card `nodeId` is the one selected (the cards render a moment after a key). */
async function expectSelected(page, nodeId) {
  try {
    await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${nodeId}"][data-selected="true"]`, {
      timeout: 5000,
    });
  } catch {
    assert.equal(await selected(page), nodeId);
  }
}

test("keyboard only: create, send, restore, go back, branch, compare, bring in, search; no mouse event", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  await countPresses(page);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  await screenshot(page, "hands-1440-landing");

  // create: n opens a conversation that is not created until the first send
  const listed = async () => (await (await page.request.get(`${server.base}/api/conversations`)).json()).length;
  const count = await listed();
  await page.keyboard.press("n");
  await page.waitForURL((u) => u.searchParams.get("new") === "1", { timeout: T });
  const root = new URL(page.url()).searchParams.get("thread");
  assert.match(root, /^th_[0-9a-f]{32}$/);
  assert.equal(await listed(), count, "nothing is created before the first send");

  await typeAndSend(page, s, "objective: Keyboard essay; todo: outline");
  await page.waitForURL((u) => u.searchParams.get("new") === null, { timeout: T });
  // titled from its objective, in the header
  await page.waitForFunction(
    () => document.querySelector('[data-testid="title-edit"]')?.textContent?.includes("Keyboard essay"),
    null,
    { timeout: T },
  );
  // a ";" inside text stays in it
  await typeAndSend(page, s, "write: Write the summary last; it is a courtesy to your future self");
  await page.waitForFunction(
    () =>
      document
        .querySelector('[data-testid="workspace-document"]')
        ?.value.includes("Write the summary last; it is a courtesy to your future self"),
    null,
    { timeout: T },
  );
  await typeAndSend(page, s, "todo: third step");
  await s.expectHead(`${root}:3`);
  await screenshot(page, "hands-1440-conversation");

  // restore: g goes to the trajectory, the selection starts on the head; ← then r
  await page.keyboard.press("g");
  assert.equal(await focused(page), "graph-keys");
  await expectSelected(page, `${root}:3`);
  await page.keyboard.press("ArrowLeft");
  await expectSelected(page, `${root}:2`);
  await page.keyboard.press("r");
  await s.byTest("restore-banner").waitFor({ timeout: T });
  await s.expectHead(`${root}:2`);
  assert.match(await s.byTest("restore-banner").innerText(), /Back to where you were \(step 3\)/);
  assert.match(await s.byTest("restore-banner").innerText(), /reload/);
  await screenshot(page, "hands-1440-restore");

  // go back: Escape
  await page.keyboard.press("Escape");
  await s.byTest("restore-banner").waitFor({ state: "detached", timeout: T });
  await s.expectHead(`${root}:3`);

  // branch: restore step 2 again and send from it
  await page.keyboard.press("g");
  await page.keyboard.press("ArrowLeft");
  await expectSelected(page, `${root}:2`);
  await page.keyboard.press("r");
  await s.byTest("restore-banner").waitFor({ timeout: T });
  await typeAndSend(page, s, "todo: the other way");
  await s.expectStepLabels(["1", "2", "3.1"]);
  await s.byTest("restore-banner").waitFor({ state: "detached", timeout: T });
  assert.match(await s.byTest("where-label").innerText(), /from step 2/);
  // no edge and no card is a tab stop: the trajectory is one stop
  await s.expectCount("graph-node", 4);
  const stops = await page.evaluate(
    () =>
      document.querySelectorAll(".react-flow__edge[tabindex], .react-flow__node[tabindex]:not([tabindex='-1'])").length,
  );
  assert.equal(stops, 0);

  // compare: the step menu (Enter) picks the head's step, then ↑ to step 3 and x
  await page.keyboard.press("g");
  await page.waitForSelector('[data-testid="graph-node"][data-head="true"][data-selected="true"]', { timeout: T });
  assert.notEqual(await selected(page), `${root}:3`);
  await page.keyboard.press("Enter");
  await s.byTest("step-menu").waitFor({ timeout: T });
  await screenshot(page, "hands-1440-step-menu");
  assert.equal(await focused(page), "step-menu-restore");
  await page.keyboard.press("Tab");
  assert.equal(await focused(page), "step-menu-compare");
  await page.keyboard.press("Enter");
  await s.byTest("step-menu").waitFor({ state: "detached", timeout: T });
  await page.keyboard.press("g");
  await page.keyboard.press("ArrowUp");
  await expectSelected(page, `${root}:3`);
  await page.keyboard.press("x");
  await s.byTest("compare-view").waitFor({ timeout: T });
  await screenshot(page, "hands-1440-compare");
  await page.keyboard.press("Escape");
  await s.byTest("compare-view").waitFor({ state: "detached", timeout: T });

  // bring in: b on the selected step 3 (off the current path) opens the merge preview,
  // which takes the focus; Escape closes it and the focus goes back to the trajectory
  await page.keyboard.press("g");
  await expectSelected(page, `${root}:3`);
  await page.keyboard.press("b");
  await s.byTest("merge-dialog").waitFor({ timeout: T });
  assert.match(await s.byTest("merge-dialog").innerText(), /Bring step 3 into the current path/);
  assert.equal(await focused(page), "merge-dialog");
  await page.keyboard.press("n"); // the page's keys wait while the dialog is open
  assert.equal(new URL(page.url()).searchParams.get("new"), null);
  await page.keyboard.press("Escape");
  await s.byTest("merge-dialog").waitFor({ state: "detached", timeout: T });
  assert.equal(await focused(page), "graph-keys");

  // search: / then the query, Enter opens the hit
  await page.keyboard.press("/");
  assert.equal(await focused(page), "search-input");
  await page.keyboard.type("other way");
  await page.locator('[data-testid="search-result"]').first().waitFor({ timeout: T });
  await screenshot(page, "hands-1440-search");
  await page.keyboard.press("Enter");
  await s.byTest("found-bar").waitFor({ timeout: T });
  await page.keyboard.press("Escape");

  // ? lists the keys
  await page.keyboard.press("?");
  await s.byTest("keys-overlay").waitFor({ timeout: T });
  assert.ok((await page.locator('[data-testid="key-binding"]').count()) >= 10);
  assert.match(await s.byTest("keys-overlay").innerText(), /5\.1\.1/);
  await screenshot(page, "hands-1440-keys");
  await page.keyboard.press("Escape");
  await s.byTest("keys-overlay").waitFor({ state: "detached", timeout: T });

  // the menu, opened by keyboard: its actions show without a hover
  for (let i = 0; i < 60 && (await focused(page)) !== "history-menu-button"; i++) await page.keyboard.press("Tab");
  assert.equal(await focused(page), "history-menu-button");
  await page.keyboard.press("Enter");
  await s.byTest("history-menu").waitFor({ timeout: T });
  assert.equal(await page.locator('[data-testid="conversation-rename"]').first().isVisible(), true);
  await screenshot(page, "hands-1440-menu");

  assert.equal(await page.evaluate(() => window.__presses), 0, "no mouse or pointer event");
  assert.deepEqual(errors, []);
  await context.close();
});

test("the message box is at most 3 keys from a page load", async () => {
  const { server, chrome } = studio;
  const res = await fetch(`${server.base}/api/conversations`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title: "Tabs" }),
  });
  const { thread_id: thread } = await res.json();
  const context = await chrome.browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  await page.goto(`${server.base}/?thread=${thread}`);
  await s_ready(page);
  let keys = 0;
  while ((await focused(page)) !== "message-input" && keys < 3) {
    await page.keyboard.press(keys === 0 ? "Tab" : "Enter");
    keys += 1;
  }
  assert.equal(await focused(page), "message-input", `not reached in ${keys} keys`);
  assert.ok(keys <= 3);
  // and one key: c
  await page.reload();
  await s_ready(page);
  await page.keyboard.press("c");
  assert.equal(await focused(page), "message-input");
  await context.close();
});

async function s_ready(page) {
  await page.locator('[data-testid="message-input"]').waitFor({ timeout: T });
  await page.waitForFunction(() => document.querySelector('[data-testid="title-edit"]') !== null, null, { timeout: T });
}

/** Every visible interactive element whose box is under 24 × 24 px. */
function smallTargets(page) {
  return page.evaluate(() => {
    const selector =
      'button, a[href], input:not([type="hidden"]), textarea, select, summary, [role="button"], [tabindex]:not([tabindex="-1"])';
    const small = [];
    for (const el of document.querySelectorAll(selector)) {
      const style = getComputedStyle(el);
      if (style.visibility === "hidden" || style.display === "none") continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (el.classList.contains("skip-link")) continue; // off screen until focused
      if (r.width < 23.5 || r.height < 23.5)
        small.push(
          `${el.tagName.toLowerCase()}[${el.getAttribute("data-testid") ?? el.className}] ${r.width.toFixed(1)}×${r.height.toFixed(1)} "${(el.textContent ?? "").trim().slice(0, 20)}"`,
        );
    }
    return small;
  });
}

/** Elements other than the page that scroll (text fields excepted). */
function innerScrollers(page) {
  return page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll("body *")) {
      if (el.matches("textarea, input") || el.closest(".react-flow")) continue;
      const style = getComputedStyle(el);
      if (!/(auto|scroll)/.test(style.overflowY)) continue;
      if (el.scrollHeight > el.clientHeight + 1) out.push(el.className || el.tagName);
    }
    return out;
  });
}

test("at 390 px: every target at least 24 × 24, one scroll area, zoom buttons off the cards, touch hints, long press", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext(PHONE);
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  assert.deepEqual(await smallTargets(page), [], "landing");
  await screenshot(page, "hands-390-landing");

  await s.newConversation();
  await s.send("objective: Phone essay; prefer: short; todo: outline; todo: draft");
  await s.send("write: A first paragraph.; subtodo: find a source");
  await s.send("todo: third");
  await s.expectCount("graph-node", 3);
  const root = new URL(page.url()).searchParams.get("thread");
  await page.waitForTimeout(500); // the graph's framing settles
  assert.deepEqual(await smallTargets(page), [], "conversation");
  assert.deepEqual(await innerScrollers(page), [], "one scroll area");
  // the message box is on screen from the start
  const composer = await s.byTest("message-input").boundingBox();
  assert.ok(composer.y + composer.height <= 844, `composer at ${composer.y}`);
  // the zoom buttons cover no card: the part of each card the canvas shows
  const zoom = await page.locator('[data-testid="rf__controls"]').boundingBox();
  const shown = await page.locator('[data-testid="graph-node"]').evaluateAll((els) => {
    const canvas = document.querySelector(".graph-body .react-flow").getBoundingClientRect();
    return els.map((e) => {
      const r = e.getBoundingClientRect();
      return {
        left: Math.max(r.left, canvas.left),
        right: Math.min(r.right, canvas.right),
        top: Math.max(r.top, canvas.top),
        bottom: Math.min(r.bottom, canvas.bottom),
      };
    });
  });
  assert.ok(
    shown.some((b) => b.right > b.left && b.bottom > b.top),
    "a card is on screen",
  );
  for (const box of shown) {
    if (box.right <= box.left || box.bottom <= box.top) continue; // not on screen
    const apart =
      box.right <= zoom.x || box.left >= zoom.x + zoom.width || box.bottom <= zoom.y || box.top >= zoom.y + zoom.height;
    assert.ok(apart, `a card at ${JSON.stringify(box)} is under the zoom buttons at ${JSON.stringify(zoom)}`);
  }
  // touch hints, never double-click or Shift+Enter
  assert.match(await s.byTest("graph-hint").innerText(), /long-press/);
  assert.doesNotMatch(await s.byTest("graph-hint").innerText(), /double-click/);
  assert.doesNotMatch(await s.byTest("message-input").getAttribute("placeholder"), /Shift\+Enter/);
  await screenshot(page, "hands-390-conversation");

  // a long press on a card (the newest, on screen) opens its menu
  const tip = s.node(`${root}:3`);
  const box = await tip.boundingBox();
  const at = { clientX: box.x + 40, clientY: box.y + box.height - 8, pointerType: "touch", button: 0, isPrimary: true };
  await tip.dispatchEvent("pointerdown", at);
  await s.byTest("step-menu").waitFor({ timeout: T });
  await tip.dispatchEvent("pointerup", at);
  assert.equal(await s.byTest("step-menu").getAttribute("data-node-id"), `${root}:3`);
  assert.deepEqual(await smallTargets(page), [], "step menu");
  await screenshot(page, "hands-390-step-menu");
  await s.byTest("step-menu-close").click();

  // restore step 2, reload: still restored, and the way back is there
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:2"]`).click();
  await s.byTest("restore-banner").waitFor({ timeout: T });
  await s.expectHead(`${root}:2`);
  await page.reload();
  await s.byTest("restore-banner").waitFor({ timeout: T });
  assert.match(await s.byTest("restore-back").innerText(), /step 3/);
  assert.deepEqual(await smallTargets(page), [], "restore");
  await screenshot(page, "hands-390-restore");
  await s.byTest("restore-back").click();
  await s.byTest("restore-banner").waitFor({ state: "detached", timeout: T });
  await s.expectHead(`${root}:3`);

  // the conversations menu: actions without a hover, finger-sized
  await s.byTest("history-menu-button").click();
  await s.byTest("history-menu").waitFor();
  assert.deepEqual(await smallTargets(page), [], "menu");
  await screenshot(page, "hands-390-menu");
  await s.byTest("history-menu-button").click();

  // compare and search
  // (picked from a keyboard: a phone's may be one)
  await page.keyboard.press("g");
  await expectSelected(page, `${root}:3`);
  await page.keyboard.press("x");
  await page.keyboard.press("ArrowLeft");
  await expectSelected(page, `${root}:2`);
  await page.keyboard.press("x");
  await s.byTest("compare-view").waitFor({ timeout: T });
  assert.deepEqual(await smallTargets(page), [], "compare");
  await screenshot(page, "hands-390-compare");
  await s.byTest("compare-close").click();
  await s.byTest("search-input").fill("third");
  await page.locator('[data-testid="search-result"]').first().waitFor({ timeout: T });
  assert.deepEqual(await smallTargets(page), [], "search");
  await screenshot(page, "hands-390-search");

  // the keys and the label legend
  await s.byTest("search-input").press("Escape");
  await s.byTest("keys-button").click();
  await s.byTest("keys-overlay").waitFor();
  assert.deepEqual(await smallTargets(page), [], "keys");
  await screenshot(page, "hands-390-keys");

  assert.deepEqual(errors, []);
  await context.close();
});

test("the header's title can be edited, and a new conversation is never an empty row", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  const before = (await (await page.request.get(`${server.base}/api/conversations`)).json()).length;
  // "Start a new conversation", then leave without writing: nothing is left behind
  await page.getByRole("button", { name: "Start a new conversation" }).click();
  await s.byTest("message-input").waitFor();
  await page.goto(server.base);
  assert.equal((await (await page.request.get(`${server.base}/api/conversations`)).json()).length, before);

  // a first send that fails creates nothing (the conversation comes with its first
  // turn, in one request): no empty row, and the message stays in the composer
  const first = await s.newConversation();
  await page.route("**/turns*", (route) => route.abort("connectionrefused"));
  await s.byTest("message-input").fill("lost first words");
  await s.byTest("send-button").click();
  await s.byTest("error-banner").waitFor({ timeout: T });
  await s.waitIdle();
  assert.equal(await s.byTest("message-input").inputValue(), "lost first words");
  assert.equal((await (await page.request.get(`${server.base}/api/conversations`)).json()).length, before);
  await page.unroute("**/turns*");
  await s.byTest("send-button").click();
  await page.waitForURL((u) => u.searchParams.get("new") === null, { timeout: T });
  const sent = await (await page.request.get(`${server.base}/api/conversations/${first}`)).json();
  assert.equal(sent.turn_index, 1);
  assert.equal(sent.title, "lost first words");

  // an edit creates it too, titled from the objective
  const thread = await s.newConversation();
  await s.byTest("workspace-objective").fill("Edited first");
  await s.byTest("workspace-objective").press("Enter");
  await page.waitForFunction(
    () => document.querySelector('[data-testid="title-edit"]')?.textContent?.includes("Edited first"),
    null,
    { timeout: T },
  );
  const made = await (await page.request.get(`${server.base}/api/conversations/${thread}`)).json();
  assert.equal(made.title, "Edited first");
  await s.byTest("title-edit").click();
  await s.byTest("title-input").fill("Renamed in the header");
  await s.byTest("title-input").press("Enter");
  await page.waitForFunction(
    () => document.querySelector('[data-testid="title-edit"]')?.textContent?.includes("Renamed in the header"),
    null,
    { timeout: T },
  );
  const renamed = await (await page.request.get(`${server.base}/api/conversations/${thread}`)).json();
  assert.equal(renamed.title, "Renamed in the header");
  await context.close();
});

test("a first edit that fails creates nothing, says why, and keeps what was typed", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  const listed = async () =>
    (await (await page.request.get(`${server.base}/api/conversations`)).json()).map((c) => c.thread_id);
  const before = await listed();
  const thread = await s.newConversation();

  // The document's title over the server's limit (500 characters): the edit is refused.
  const long = "T".repeat(501);
  const title = s.byTest("workspace-document-title");
  await title.fill(long);
  await title.blur();
  await s.byTest("error-banner").waitFor({ timeout: T });
  assert.match(await s.byTest("error-banner").innerText(), /500/);
  await s.byTest("document-unsaved").waitFor({ timeout: T });
  assert.equal(await title.inputValue(), long, "the title typed is kept");
  // Nothing was left behind: no conversation listed or readable under the id.
  assert.deepEqual(await listed(), before);
  assert.equal((await page.request.get(`${server.base}/api/conversations/${thread}`)).status(), 404);
  assert.equal(new URL(page.url()).searchParams.get("new"), "1");

  // Shortened, the same edit goes through and creates the conversation with it.
  await title.fill("A title that fits");
  await title.blur();
  await page.waitForURL((u) => u.searchParams.get("new") === null, { timeout: T });
  assert.deepEqual((await listed()).sort(), [...before, thread].sort());
  const workspace = await (await page.request.get(`${server.base}/api/conversations/${thread}/workspace`)).json();
  assert.equal(workspace.document.title, "A title that fits");
  await s.byTest("document-unsaved").waitFor({ state: "hidden", timeout: T });
  await context.close();
});
