// Finding one's way in the studio (issue 50, points 1–4, 10 and 12) against the real
// backend (SQLite, offline model) in Debian chromium: step details on an explicit
// action in a drawer that leaves the chat its height, where am I (title, branch,
// the path a family reopens on, the way back after a reload), a double-click that
// restores, big trees legible from the first paint, the phone, and the smaller points.
// Screenshots at 1440 px and 390 px land in frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import AxeBuilder from "@axe-core/playwright";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_SUMMARY_DEBOUNCE_SECONDS: "0" });
const T = 20_000;
const WIDE = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };

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

/** A root of `n` steps and an unnamed branch at step 3 with two steps (4.1, 5.1); the
 * head is left on `headOn` ("branch" or "main"). */
async function family(base, title, n = 5, headOn = "main") {
  const root = (await api(base, "POST", "/conversations", { title })).thread_id;
  for (let k = 1; k <= n; k++) await send(base, root, `objective: ${title} step ${k}`);
  const branch = (
    await api(base, "POST", `/conversations/${root}/branch`, { from_turn: 3, reason: "try a shorter essay" })
  ).thread_id;
  await send(base, branch, "document: a much shorter essay with another opening and another ending entirely");
  await send(base, branch, "todo: compare both openings side by side");
  if (headOn === "main") await api(base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:${n}` });
  return { root, branch };
}

async function open(viewport, url) {
  const context = await studio.chrome.browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  const failed = [];
  page.on("response", (r) => {
    if (r.url().includes("/api/") && r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  await page.goto(`${studio.server.base}${url}`);
  return { context, page, errors, failed, s: new StudioPage(page) };
}

/** The chat's scroll area: the height of it that is on screen. */
function chatHeight(page) {
  return page.evaluate(() => {
    const el = document.querySelector(".chat-scroll");
    if (!el) return 0;
    const r = el.getBoundingClientRect();
    return Math.max(0, Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0));
  });
}

test("1: a click selects; the details open on an explicit action, in a drawer that leaves the chat its height", async () => {
  const { root } = await family(studio.server.base, "Details", 4);
  const { context, page, errors, s } = await open(WIDE, `/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  await s.expectStepLabels(["1", "2", "3", "4"]);
  await page.waitForTimeout(500);
  const closed = await chatHeight(page);
  assert.ok(closed > 150, `the chat is visible: ${closed}px`);

  // one click selects (the step is shown in the chat): no details
  await s.clickSettled(s.node(`${root}:2`));
  await page.waitForTimeout(600);
  assert.equal(await s.byTest("node-details").count(), 0, "a single click opens no details");
  await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${root}:2"][data-selected="true"]`, {
    timeout: T,
  });

  // the card's details button opens them, naming that step
  await s.node(`${root}:2`).locator('[data-testid="graph-node-details"]').click();
  const details = s.byTest("node-details");
  await details.waitFor({ timeout: T });
  assert.equal(await details.getAttribute("data-node-id"), `${root}:2`);
  assert.match(await details.locator("header").innerText(), /Step 2\b/);
  const open1 = await chatHeight(page);
  assert.ok(open1 >= 0.6 * closed, `chat ${open1}px with the details open, ${closed}px closed`);
  await screenshot(page, "nav-details-1440");

  // from the step's menu (Enter on the selected step), another step: the drawer names it
  await page.keyboard.press("Escape");
  await details.waitFor({ state: "detached", timeout: T });
  await s.byTest("graph-keys").focus();
  await page.keyboard.press("ArrowRight");
  await page.waitForSelector(`[data-testid="graph-node"][data-node-id="${root}:3"][data-selected="true"]`, {
    timeout: T,
  });
  await page.keyboard.press("Enter");
  await s.byTest("step-menu-details").click();
  await page.waitForSelector(`[data-testid="node-details"][data-node-id="${root}:3"]`, { timeout: T });
  assert.match(await details.locator("header").innerText(), /Step 3\b/);
  assert.ok((await chatHeight(page)) >= 0.6 * closed);

  // a restore elsewhere closes details that no longer name the step on screen
  await s.node(`${root}:1`).dblclick();
  await s.byTest("restore-banner").waitFor({ timeout: T });
  await page.waitForFunction(
    (id) => {
      const d = document.querySelector('[data-testid="node-details"]');
      return d === null || d.getAttribute("data-node-id") === id;
    },
    `${root}:1`,
    { timeout: T },
  );
  assert.deepEqual(errors, []);
  await context.close();
});

test("2: the header keeps the title beside the branch; a family reopens on the path chosen; the way back survives a reload", async () => {
  const base = studio.server.base;
  // the head was last moved to the branch (by another client): nothing chosen yet, so the main path opens
  const { root, branch } = await family(base, "Where am I essay", 5, "branch");
  const { context, page, errors, s } = await open(WIDE, `/?thread=${root}`);
  await s.expectStepLabels(["1", "2", "3", "4", "5"]);

  // choose the branch from the conversations menu: the header names the title and a short label
  await s.openFromHistory(branch);
  await s.expectStepLabels(["1", "2", "3", "4.1", "5.1"]);
  const header = s.byTest("conversation-title");
  await page.waitForFunction(() =>
    /4\.1/.test(document.querySelector('[data-testid="where-label"]')?.textContent ?? ""),
  );
  const title = await header.locator(".title-text").boundingBox();
  assert.ok(title && title.width > 60, `the title stays readable: ${JSON.stringify(title)}`);
  assert.match(await header.innerText(), /Where am I essay/);
  const where = (await s.byTest("where-label").innerText()).trim();
  assert.ok(where.length <= 40, `a short label beside the title: "${where}"`);
  await screenshot(page, "nav-where-1440");

  // another client moves the head to the main path: a reload still opens the branch chosen
  await api(base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:5` });
  await page.reload();
  await s.expectStepLabels(["1", "2", "3", "4.1", "5.1"]);

  // restore step 2 while the branch is shown; after a reload the way back still says 5.1 and leads there.
  // The chosen path's record is slowed down: a reload right after the restore must still open on it.
  await page.route("**/chosen-path", async (route) => {
    if (route.request().method() === "PUT") await new Promise((done) => setTimeout(done, 1500));
    await route.continue();
  });
  await s.nodeByLabel("2").dblclick();
  const banner = s.byTest("restore-banner");
  await banner.waitFor({ timeout: T });
  await page.waitForFunction(() =>
    /step 2/.test(document.querySelector('[data-testid="restore-banner"]')?.textContent ?? ""),
  );
  const said = await s.byTest("restore-back").innerText();
  await page.reload();
  await banner.waitFor({ timeout: T });
  await page.waitForTimeout(1500);
  assert.equal(await s.byTest("restore-back").innerText(), said);
  assert.match(said, /5\.1/);
  await s.byTest("restore-back").click();
  await banner.waitFor({ state: "detached", timeout: T });
  await s.expectStepLabels(["1", "2", "3", "4.1", "5.1"]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("3: a double-click at a card's centre restores it; no card button lies at its centre", async () => {
  const { root } = await family(studio.server.base, "Double click", 4);
  const { context, page, errors, s } = await open(WIDE, `/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  await page.waitForTimeout(800);
  for (const card of await page.locator('[data-testid="graph-node"]').all()) {
    const box = await card.boundingBox();
    if (box === null) continue;
    const hit = await page.evaluate(
      ([x, y]) => {
        const el = document.elementFromPoint(x, y);
        return el?.closest("button") ? el.closest("button").getAttribute("data-testid") : null;
      },
      [box.x + box.width / 2, box.y + box.height / 2],
    );
    assert.equal(hit, null, `a button (${hit}) at the centre of ${await card.getAttribute("data-label")}`);
  }
  await s.node(`${root}:2`).dblclick();
  await s.byTest("restore-banner").waitFor({ timeout: T });
  assert.match(await s.byTest("restore-banner").innerText(), /Restored step 2/);
  await s.expectStepLabels(["1", "2"]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("4: a big family opens legible on its path; Esc leaves Maximise; branches told apart; archive undo toast", async () => {
  const base = studio.server.base;
  const root = (await api(base, "POST", "/conversations", { title: "Long family" })).thread_id;
  for (let k = 1; k <= 40; k++) await send(base, root, `step ${k}`);
  const reasons = ["a formal tone", "a playful tone", "a shorter essay"];
  const branches = [];
  for (const [i, reason] of reasons.entries()) {
    const b = (await api(base, "POST", `/conversations/${root}/branch`, { from_turn: 33 + i * 2, reason })).thread_id;
    await send(base, b, "document: the same edit on every branch");
    branches.push(b);
  }
  await api(base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:40` });
  const { context, page, errors, s } = await open(WIDE, `/?thread=${root}`);
  await s.expectHead(`${root}:40`);
  await page.waitForTimeout(1200);
  // every text of a card on screen is at least 11 px high
  const small = await page.evaluate(() => {
    const view = document.querySelector(".react-flow__viewport");
    const zoom = view ? new DOMMatrixReadOnly(getComputedStyle(view).transform).a : 1;
    const panel = document.querySelector('[data-testid="graph-panel"]').getBoundingClientRect();
    const out = [];
    for (const card of document.querySelectorAll('[data-testid="graph-node"]')) {
      const r = card.getBoundingClientRect();
      if (r.right < panel.left || r.left > panel.right || r.bottom < panel.top || r.top > panel.bottom) continue;
      for (const el of card.querySelectorAll("*")) {
        if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const st = getComputedStyle(el);
        if (st.display === "none" || st.visibility === "hidden" || el.getClientRects().length === 0) continue;
        const px = parseFloat(st.fontSize) * zoom;
        if (px < 11) out.push(`${card.dataset.label}: "${el.textContent.trim().slice(0, 20)}" ${px.toFixed(1)}px`);
      }
    }
    return { zoom, out };
  });
  assert.deepEqual(small.out, [], `text under 11 px at zoom ${small.zoom}`);
  assert.equal(await s.node(`${root}:40`).isVisible(), true);
  await s.byTest("graph-minimap").waitFor({ state: "visible", timeout: T });
  await screenshot(page, "nav-big-1440");

  // Esc leaves Maximise
  await s.byTest("graph-maximise").click();
  await page.waitForSelector('[data-testid="graph-panel"].maximised', { timeout: T });
  await page.keyboard.press("Escape");
  await page.waitForSelector('[data-testid="graph-panel"]:not(.maximised)', { timeout: T });

  // the conversations menu tells the branches apart by label and reason
  await s.byTest("history-menu-button").click();
  const rows = [];
  for (const b of branches) {
    const item = page.locator(`[data-testid="conversation-item"][data-thread-id="${b}"]`);
    await item.waitFor({ timeout: T });
    rows.push((await item.innerText()).replace(/\s+/g, " "));
  }
  for (const [i, row] of rows.entries()) {
    assert.ok(row.includes(reasons[i]), `the reason in "${row}"`);
    assert.match(row, new RegExp(`\\b${33 + i * 2 + 1}\\.\\d\\b`), `the step label in "${row}"`);
  }
  await screenshot(page, "nav-branches-menu-1440");
  await page.keyboard.press("Escape");

  // Tidy up: labels and reasons; archiving one shows an undo toast that brings it back
  await s.byTest("suggestions-button").click();
  const item = s.byTest("suggestion-item").first();
  await item.waitFor({ timeout: T });
  const texts = (await s.byTest("suggestion-item").allInnerTexts()).map((t) => t.replace(/\s+/g, " "));
  assert.equal(new Set(texts).size, texts.length, `Tidy up items are told apart: ${texts.join(" | ")}`);
  for (const t of texts) assert.match(t, /\b\d+\.\d\b/, `a step label in "${t}"`);
  const archived = await item.getAttribute("data-thread-id");
  await item.locator('[data-testid="archive-button"]').click();
  const toast = s.byTest("archive-toast");
  await toast.waitFor({ timeout: T });
  await toast.locator('[data-testid="archive-undo"]').click();
  await toast.waitFor({ state: "detached", timeout: T });
  const after = await api(base, "GET", `/conversations/${root}/graph`);
  assert.equal(after.threads.find((t) => t.thread_id === archived)?.archived ?? false, false);
  assert.deepEqual(errors, []);
  await context.close();
});

test("10: at 390 px the reply scrolls into view, the banner stays, the minimap covers no card, no request for a discarded draft", async () => {
  const { root } = await family(studio.server.base, "Phone", 4);
  const { context, page, errors, failed, s } = await open(PHONE, `/?thread=${root}`);
  await s.expectHead(`${root}:4`);
  await page.waitForTimeout(800);
  // the minimap covers no card
  await s.byTest("graph-panel").scrollIntoViewIfNeeded();
  await screenshot(page, "nav-phone-open-390");
  const covered = await page.evaluate(() => {
    const m = document.querySelector('[data-testid="graph-minimap"]')?.getBoundingClientRect();
    if (!m || m.width === 0) return [];
    return [...document.querySelectorAll('[data-testid="graph-node"]')]
      .filter((c) => {
        const r = c.getBoundingClientRect();
        return r.width > 0 && r.left < m.right && r.right > m.left && r.top < m.bottom && r.bottom > m.top;
      })
      .map((c) => c.dataset.label);
  });
  assert.deepEqual(covered, [], "cards under the minimap");

  // after Send the reply is on screen
  await s.send("objective: the phone's fifth step");
  await page.waitForTimeout(800);
  const reply = s.assistantMessages().last();
  const box = await reply.boundingBox();
  const composer = await s.byTest("message-input").boundingBox();
  assert.ok(
    box && box.y >= 0 && box.y + Math.min(box.height, 40) <= composer.y,
    `the reply ${JSON.stringify(box)} is in view, above the composer at ${composer?.y}`,
  );
  await screenshot(page, "nav-phone-reply-390");

  // restore step 2: the banner stays visible while reading the chat
  // (a phone draws only the cards in view: step 2 is restored from its checkpoint in the chat)
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:2"]`).click();
  const banner = s.byTest("restore-banner");
  await banner.waitFor({ timeout: T });
  await s.byTest("message-input").scrollIntoViewIfNeeded();
  const b = await banner.boundingBox();
  assert.ok(b && b.y >= -1 && b.y + b.height <= PHONE.height + 1, `the banner is on screen: ${JSON.stringify(b)}`);
  await screenshot(page, "nav-phone-restored-390");

  // leaving the restored step asks nothing of the discarded draft
  failed.length = 0;
  errors.length = 0;
  await s.byTest("restore-back").click();
  await banner.waitFor({ state: "detached", timeout: T });
  await s.expectStepLabels(["1", "2", "3", "4", "5"]);
  await page.waitForTimeout(1500);
  assert.deepEqual(failed, [], "no failed request when leaving the restore");
  assert.deepEqual(errors, [], "no console error when leaving the restore");
  await context.close();
});

test("12: the tab's title, a multi-line objective, breadcrumbs, Tidy up, compare tags, labelled controls", async () => {
  const base = studio.server.base;
  const { context, page, errors, s } = await open(WIDE, "/");
  const empty = await s.newConversation();
  assert.equal(await s.byTest("suggestions-button").count(), 0, "no Tidy up on an empty conversation");
  assert.ok(empty);

  const root = (await api(base, "POST", "/conversations", { title: "Tab title essay" })).thread_id;
  const long = "Write an essay on trees that grow in cities, their shade and their roots, for a general audience";
  await send(base, root, `objective: ${long}`);
  await send(base, root, "todo: read the sources");
  await send(base, root, "todo: draft the essay");
  for (let k = 4; k <= 5; k++) await send(base, root, `step ${k}`);
  await page.goto(`${base}/?thread=${root}`);
  await s.expectHead(`${root}:5`);
  await page.waitForFunction(() => document.title.includes("Tab title essay"), null, { timeout: T });

  // the objective shows all its text
  await s.expectObjective(long);
  const obj = await page.evaluate(() => {
    const el = document.querySelector('[data-testid="workspace-objective"]');
    return {
      tag: el.tagName,
      scroll: el.scrollHeight,
      client: el.clientHeight,
      sw: el.scrollWidth,
      cw: el.clientWidth,
    };
  });
  assert.equal(obj.tag, "TEXTAREA");
  assert.ok(obj.scroll <= obj.client + 2 && obj.sw <= obj.cw + 2, `no cut text: ${JSON.stringify(obj)}`);

  // a 5-step path shows every step in its breadcrumbs
  const crumbs = await s.byTest("breadcrumb-item").allInnerTexts();
  for (const label of ["1", "2", "3", "4", "5"])
    assert.ok(
      crumbs.some((c) => c.trim().startsWith(label)),
      `${label} in ${crumbs}`,
    );

  // compare tags legible
  await s.node(`${root}:2`).locator('[data-testid="graph-node-compare"]').click();
  await s.node(`${root}:4`).locator('[data-testid="graph-node-compare"]').click();
  await s.byTest("compare-view").waitFor({ timeout: T });
  await page.waitForTimeout(600);
  const tags = await page.evaluate(() => {
    const view = document.querySelector(".react-flow__viewport");
    const zoom = view ? new DOMMatrixReadOnly(getComputedStyle(view).transform).a : 1;
    return [...document.querySelectorAll(".picked")].map((e) => parseFloat(getComputedStyle(e).fontSize) * zoom);
  });
  assert.equal(tags.length, 2);
  for (const px of tags) assert.ok(px >= 11, `compare tag ${px.toFixed(1)}px`);
  await screenshot(page, "nav-compare-1440");
  await s
    .byTest("compare-close")
    .click()
    .catch(() => page.keyboard.press("Escape"));

  // axe: no label-title-only, wide and narrow
  for (const viewport of [WIDE, PHONE]) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(500);
    const result = await new AxeBuilder({ page }).withRules(["label-title-only"]).analyze();
    const nodes = result.violations.flatMap((v) => v.nodes.map((n) => n.target.join(" ")));
    assert.deepEqual(nodes, [], `label-title-only at ${viewport.width}px`);
  }
  await screenshot(page, "nav-small-390");
  assert.deepEqual(errors, []);
  await context.close();
});
