// Coding in the studio (token mode, two users): the owner makes a codebook in the
// coding drawer and shares the family with a commenter; each codes a span by keyboard
// (a selection extended with Shift+→, then `k`, the picker, Enter) and a whole step
// (a focused message, `k`, ↓, Enter); the commenter sees only their own codings
// (blind); the owner reveals them, and the agreement table shows the figures with the
// disagreements linked to their step; the coder's open studio follows the reveal
// live. Offsets are code points: an emoji precedes the coded word. A study's family:
// its owner reveals for the study from the studio, hides again from the study's
// page, and a coder's open studio follows both. Screenshots at 1440 px and 390 px;
// axe on the coding UI.
import AxeBuilder from "@axe-core/playwright";
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_AUTH: "token" });
const T = 20_000;
const FIRST = "objective: 👍 trust the plan";

async function api(server, token, method, path, body) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(`${server.base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
  return text && !text.startsWith("event:") ? JSON.parse(text) : null;
}

/** A browser of its own, signed in with `token`, on the family `thread` (or at `url`,
 * showing `messages` messages). */
async function signedIn(
  chrome,
  server,
  token,
  thread,
  viewport = { width: 1440, height: 900 },
  { url = `/?thread=${thread}`, messages = 4 } = {},
) {
  const ctx = await chrome.browser.newContext({ viewport });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.byTest("token-input").fill(token);
  await s.byTest("token-submit").click();
  await s.byTest("new-conversation").waitFor({ timeout: T });
  await page.goto(`${server.base}${url}`);
  await s.expectCount("chat-message", messages);
  return { ctx, page, s, errors };
}

function userText(page, nodeId) {
  return page.locator(`[data-testid="chat-message"][data-role="user"][data-node-id="${nodeId}"] [data-coding-field]`);
}

/** Selects `word` minus its last letter in the step's message, then extends the
 * selection by one letter with Shift+→ (the keyboard's way of selecting). */
async function selectWord(page, nodeId, word) {
  await page.evaluate(
    ([id, w]) => {
      const field = document.querySelector(
        `[data-testid="chat-message"][data-role="user"][data-node-id="${id}"] [data-coding-field]`,
      );
      const walker = document.createTreeWalker(field, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const at = n.data.indexOf(w);
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(n, at);
        range.setEnd(n, at + w.length - 1);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        return;
      }
      throw new Error(`no ${w} in ${id}`);
    },
    [nodeId, word],
  );
  await page.keyboard.press("Shift+ArrowRight");
  await page.waitForFunction((w) => window.getSelection()?.toString() === w, word, { timeout: T });
}

/** Waits for the picker to open with the focus in its filter (keys typed go there). */
async function pickerReady(page) {
  await page.waitForFunction(() => document.activeElement?.dataset.testid === "coding-filter", null, { timeout: T });
}

/** `k`, then the code typed into the picker's filter (or ↓ presses), then Enter. */
async function codeByKeys(s, { type = "", down = 0 } = {}) {
  await s.page.keyboard.press("k");
  await pickerReady(s.page);
  if (type) await s.page.keyboard.type(type);
  for (let i = 0; i < down; i++) await s.page.keyboard.press("ArrowDown");
  await s.page.keyboard.press("Enter");
  await s.byTest("coding-picker").waitFor({ state: "detached", timeout: T });
}

async function axeSerious(page, where) {
  await page.waitForTimeout(300);
  const result = await new AxeBuilder({ page })
    .include('[data-testid="coding-panel"], [data-testid="coding-picker"], .chat')
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"])
    .analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${where}: ${v.id} ${v.help}: ${v.nodes
          .map((n) => n.target.join(" "))
          .slice(0, 4)
          .join(", ")}`,
    );
}

test("two coders code by keyboard, blind; the owner reveals and reads the agreement", async () => {
  const { server, chrome } = studio;
  const olga = server.createUser("olga");
  const cai = server.createUser("cai");
  const thread = (await api(server, olga, "POST", "/api/conversations", { title: "trust study" })).thread_id;
  await api(server, olga, "POST", `/api/conversations/${thread}/turns`, { content: FIRST });
  await api(server, olga, "POST", `/api/conversations/${thread}/turns`, { content: "todo: check the sources" });
  await api(server, olga, "POST", `/api/conversations/${thread}/shares`, { role: "commenter", user: "cai" });
  const one = `${thread}:1`;
  const two = `${thread}:2`;

  // The owner makes a codebook in the coding drawer.
  const owner = await signedIn(chrome, server, olga, thread);
  const { s, page } = owner;
  await s.byTest("coding-panel-button").click();
  await s.byTest("coding-panel").waitFor();
  assert.equal(await s.byTest("coding-state").innerText(), "blind");
  await s.byTest("codebook-name").fill("Trust");
  await s.byTest("codebook-codes").fill("hedging, overclaiming");
  await s.byTest("codebook-create").click();
  await s.expectCount("code-row", 2);
  await s.byTest("code-add-name").fill("repair");
  await s.byTest("code-add").click();
  await s.expectCount("code-row", 3);
  const books = await api(server, olga, "GET", "/api/codebooks");
  const code = Object.fromEntries(books[0].codes.map((c) => [c.name, c.id]));
  await page.locator('[data-testid="coding-panel"] button[aria-label="Close coding"]').click();

  // A span by keyboard: "trust" after an emoji (code points 13..18, UTF-16 14..19).
  await selectWord(page, one, "trust");
  await s.byTest("coding-button").and(page.locator('[data-scope="selection"]')).waitFor({ timeout: T });
  await page.keyboard.press("k");
  await pickerReady(page);
  assert.match(await s.byTest("coding-picker").innerText(), /“trust”/);
  await screenshot(page, "coding-picker-1440");
  await page.keyboard.type("hedg");
  assert.equal(await s.byTest("coding-option").count(), 1);
  await s.byTest("coding-memo").fill("trust, hedged");
  await s.byTest("coding-filter").focus();
  await page.keyboard.press("Enter");
  await s.byTest("coding-picker").waitFor({ state: "detached", timeout: T });
  const mine = page.locator(`[data-testid="chat-message"][data-node-id="${one}"] [data-testid="coding-item"]`);
  await mine.waitFor({ timeout: T });
  assert.equal(await mine.getAttribute("data-code-id"), String(code.hedging));
  assert.match(await mine.innerText(), /hedging[\s\S]*“trust”[\s\S]*trust, hedged/);
  assert.equal(await userText(page, one).locator("mark").innerText(), "trust");
  // the whole step 2 by keyboard: its message focused, `k`, ↓ to the second code, Enter
  await page.locator(`[data-testid="chat-message"][data-role="user"][data-node-id="${two}"]`).focus();
  await codeByKeys(s, { down: 1 });
  const ownerTwo = page.locator(`[data-testid="chat-message"][data-node-id="${two}"] [data-testid="coding-item"]`);
  await ownerTwo.waitFor({ timeout: T });
  assert.equal(await ownerTwo.getAttribute("data-code-id"), String(code.overclaiming));
  // chips on the cards
  await s.node(one).locator('[data-testid="coding-chip"]').waitFor({ timeout: T });
  assert.match(await s.node(two).locator('[data-testid="coding-chips"]').innerText(), /overclaiming/);
  const stored = await api(server, olga, "GET", `/api/conversations/${thread}/codings`);
  assert.deepEqual(
    stored.map((c) => [c.node_id, c.code_id, c.span]),
    [
      [one, code.hedging, { field: "user_message", start: 13, end: 18 }],
      [two, code.overclaiming, null],
    ],
  );
  await screenshot(page, "coding-owner-1440");

  // The commenter codes blind: none of the owner's codings, only their own.
  const coder = await signedIn(chrome, server, cai, thread);
  const g = coder.s;
  await g.byTest("coding-panel-button").waitFor();
  assert.match(await g.byTest("coding-panel-button").innerText(), /blind/);
  assert.equal(await g.byTest("coding-item").count(), 0);
  assert.equal(await g.byTest("coding-chip").count(), 0);
  await selectWord(coder.page, one, "trust");
  await codeByKeys(g, { type: "hedging" });
  await coder.page.locator(`[data-testid="chat-message"][data-role="assistant"][data-node-id="${two}"]`).focus();
  await codeByKeys(g, { type: "hedging" });
  await g.expectCount("coding-item", 2);
  assert.deepEqual(
    await coder.page.locator('[data-testid="coding-item"]').evaluateAll((els) => els.map((e) => e.dataset.coder)),
    ["cai", "cai"],
  );
  await g.byTest("coding-panel-button").click();
  await g.byTest("coding-panel").waitFor();
  assert.match(await g.byTest("coding-blind-note").innerText(), /only your own codings/);
  assert.equal(await g.byTest("coding-reveal").count(), 0);
  assert.equal(await g.byTest("agreement-table").count(), 0);
  await screenshot(coder.page, "coding-blind-coder-1440");
  await coder.page.keyboard.press("Escape");
  await g.byTest("coding-panel").waitFor({ state: "detached", timeout: T });
  // the coder may delete their own coding (and only theirs)
  assert.equal(await coder.page.locator('[data-testid="coding-delete"]').count(), 2);

  // The owner sees both coders' codings (the owner always does; the coder's arrive
  // without a reload), reveals, and reads the agreement: 2 units (steps 1 and 2); they
  // agree on "hedging" at step 1 only.
  await s.expectCount("coding-item", 4);
  await s.node(two).locator('[data-testid="coding-chip"]', { hasText: "hedging" }).waitFor({ timeout: T });
  await s.byTest("coding-panel-button").click();
  await s.byTest("coding-reveal").click();
  await page.waitForSelector('[data-testid="coding-state"][data-revealed="true"]', { timeout: T });
  const table = s.byTest("agreement-table");
  await table.waitFor({ timeout: T });
  assert.equal(await table.getAttribute("data-units"), "2");
  const hedging = table.locator(`[data-testid="agreement-row"][data-code-id="${code.hedging}"]`);
  assert.equal(await hedging.locator('[data-statistic="percent_agreement"]').innerText(), "50 %");
  assert.equal(await hedging.locator('[data-statistic="cohen_kappa"]').innerText(), "0.00");
  const overall = s.byTest("agreement-overall");
  assert.equal(await overall.locator('[data-statistic="percent_agreement"]').innerText(), "50 %");
  // Cohen's κ is a figure with two coders; untick one: fewer than two, no table.
  const items = s.byTest("disagreement-item");
  await s.expectCount("disagreement-item", 2);
  assert.match(await items.nth(0).innerText(), /Step 2\s+hedging: applied by cai; not by olga/);
  assert.match(await items.nth(1).innerText(), /Step 2\s+overclaiming: applied by olga; not by cai/);
  await screenshot(page, "coding-agreement-1440");
  // A disagreement links to its step: the chat shows it.
  await items.nth(0).locator("button").click();
  await page.waitForSelector(`[data-testid="chat-message"][data-node-id="${two}"].flash`, { timeout: T });
  found.push(...(await axeSerious(page, "owner 1440")));

  // Revealed: the coder's open studio learns it on the family's event stream (no
  // reload) and shows the owner's codings too, and the agreement.
  await g.expectCount("coding-item", 4);
  await g.expectCount("coding-delete", 2);
  assert.deepEqual(
    await coder.page
      .locator('[data-testid="coding-item"][data-mine="true"]')
      .evaluateAll((els) => els.map((e) => e.dataset.coder)),
    ["cai", "cai"],
  );
  await g.byTest("coding-panel-button").click();
  await g.byTest("agreement-table").waitFor({ timeout: T });

  // 390 px: the owner's phone, the drawer and the picker.
  const phone = await signedIn(chrome, server, olga, thread, { width: 390, height: 844 });
  // a new session of the owner's still knows which codings are theirs to delete
  await phone.s.expectCount("coding-item", 4);
  await phone.page.waitForFunction(
    () =>
      document.querySelectorAll('[data-testid="coding-item"][data-mine="true"] [data-testid="coding-delete"]')
        .length === 2,
    null,
    { timeout: T },
  );
  await phone.s.byTest("coding-panel-button").click();
  await phone.s.byTest("agreement-table").waitFor({ timeout: T });
  await screenshot(phone.page, "coding-agreement-390");
  found.push(...(await axeSerious(phone.page, "owner 390 drawer")));
  await phone.page.locator('[data-testid="coding-panel"] button[aria-label="Close coding"]').click();
  await phone.page.locator(`[data-testid="chat-message"][data-role="user"][data-node-id="${one}"]`).focus();
  await phone.page.keyboard.press("k");
  await pickerReady(phone.page);
  await screenshot(phone.page, "coding-picker-390");
  found.push(...(await axeSerious(phone.page, "owner 390 picker")));
  await phone.page.keyboard.press("Escape");
  await phone.s.byTest("coding-picker").waitFor({ state: "detached", timeout: T });
  await phone.page
    .locator(`[data-testid="chat-message"][data-role="user"][data-node-id="${one}"]`)
    .scrollIntoViewIfNeeded();
  await screenshot(phone.page, "coding-message-390");

  assert.deepEqual(found, []);
  assert.deepEqual([...owner.errors, ...coder.errors, ...phone.errors], []);
  await owner.ctx.close();
  await coder.ctx.close();
  await phone.ctx.close();
});

const found = [];

test("which is better on a sibling switcher; the datasets beside the CSV export", async () => {
  const { server, chrome } = studio;
  const ines = server.createUser("ines");
  const root = (await api(server, ines, "POST", "/api/conversations", { title: "two answers" })).thread_id;
  await api(server, ines, "POST", `/api/conversations/${root}/turns`, { content: "objective: a first frame" });
  await api(server, ines, "POST", `/api/conversations/${root}/turns`, { content: "todo: one way" });
  const other = (await api(server, ines, "POST", `/api/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await api(server, ines, "POST", `/api/conversations/${other}/turns`, { content: "todo: another way" });
  const { ctx, page, s, errors } = await signedIn(chrome, server, ines, root);
  // the path shown is the first one: its step 2 forks with the other path's
  const here = `${root}:2`;
  const rival = `${other}:2`;

  // Step 2 has a sibling: "Which is better?" judges it against it.
  const judge = page.locator(`[data-testid="judge-button"][data-node-id="${here}"]`);
  await judge.click();
  const form = s.byTest("judge-form");
  await form.waitFor();
  assert.equal(await s.byTest("judge-other").inputValue(), rival);
  await s.byTest("judge-a").check();
  await s.byTest("judge-criterion").fill("clarity");
  await s.byTest("judge-rationale").fill("names the next step");
  await screenshot(page, "coding-judge-1440");
  await s.byTest("judge-submit").click();
  await form.waitFor({ state: "detached", timeout: T });
  const stored = await api(server, ines, "GET", `/api/conversations/${root}/judgments`);
  assert.deepEqual(
    stored.map((j) => [j.a, j.b, j.preferred, j.criterion, j.rationale, j.judge]),
    [[here, rival, "a", "clarity", "names the next step", "ines"]],
  );
  // Two sibling cards picked for a comparison offer the same judgment.
  await page.waitForTimeout(500);
  await s.node(here).click({ modifiers: ["Shift"] });
  await s.node(rival).click({ modifiers: ["Shift"] });
  const compare = s.byTest("compare-view");
  await compare.waitFor({ timeout: T });
  await compare.locator(`[data-testid="judge-button"][data-node-id="${here}"]`).waitFor({ timeout: T });
  await s.byTest("compare-close").click();
  // The step's details list it.
  await s.openDetails(here);
  const item = s.byTest("node-details").locator('[data-testid="judgment-item"]');
  await item.waitFor({ timeout: T });
  const rivalLabel = await s.node(rival).getAttribute("data-label");
  assert.equal(
    (await item.innerText()).replace(/\s+/g, " ").trim(),
    `Step 2 is better than step ${rivalLabel} (clarity) — ines names the next step`,
  );

  // The family's datasets, beside its CSV export in the conversations menu.
  const entry = page.locator(`[data-testid="conversation-item"][data-thread-id="${root}"]`).locator("..");
  for (const [id, suffix, head] of [
    ["qdpx", /\.qdpx$/, "PK"],
    ["tree", /-tree\.jsonl$/, "{"],
    ["preferences", /-preferences\.jsonl$/, "{"],
  ]) {
    // (a download closes the menu, as the CSV's does)
    await s.byTest("history-menu-button").click();
    await entry.locator('[data-testid="dataset-menu"] summary').click();
    if (id === "qdpx") await screenshot(page, "coding-datasets-menu-1440");
    const [download] = await Promise.all([
      page.waitForEvent("download", { timeout: T }),
      entry.locator(`[data-testid="dataset-export-${id}"]`).click(),
    ]);
    assert.match(download.suggestedFilename(), suffix);
    const path = await download.path();
    const { readFileSync } = await import("node:fs");
    const body = readFileSync(path);
    assert.equal(body.subarray(0, head.length).toString(), head, id);
    if (id === "preferences") {
      const line = JSON.parse(body.toString().trim().split("\n")[0]);
      assert.equal(line.criterion, "clarity");
      assert.match(JSON.stringify(line.chosen), /one way/);
    }
  }
  assert.deepEqual(errors, []);
  await ctx.close();
});

test("a study's family: the study's owner reveals from the studio, hides from the study page; the coder follows live", async () => {
  const { server, chrome } = studio;
  const rhea = server.createUser("rhea");
  const cody = server.createUser("cody");
  const book = await api(server, rhea, "POST", "/api/codebooks", { name: "Study codes", codes: [{ name: "clarify" }] });
  const study = await api(server, rhea, "POST", "/api/studies", {
    name: "Trips",
    task: { objective: "plan" },
    conditions: [{ name: "tree" }],
    codebook_id: book.id,
  });
  await api(server, rhea, "POST", `/api/studies/${study.id}/members`, { user: "cody", role: "coder" });
  const joined = await api(server, null, "POST", "/api/studies/join", { token: study.join_token });
  const family = joined.thread_id;
  await api(server, joined.token, "POST", `/api/conversations/${family}/turns`, { content: "objective: a trip" });
  const clarify = book.codes[0].id;
  await api(server, rhea, "POST", `/api/conversations/${family}/nodes/1/codings`, { code_id: clarify });
  await api(server, cody, "POST", `/api/conversations/${family}/nodes/1/codings`, { code_id: clarify, memo: "mine" });
  const url = `/?thread=${family}&view=study`;

  // The coder reads the family as the study page opens it: their own coding only.
  const coder = await signedIn(chrome, server, cody, family, undefined, { url, messages: 2 });
  await coder.s.expectCount("coding-item", 1);
  assert.equal(await coder.s.byTest("coding-item").getAttribute("data-mine"), "true");

  // The study's owner: every coding, and the reveal is the study's.
  const owner = await signedIn(chrome, server, rhea, family, undefined, { url, messages: 2 });
  await owner.s.expectCount("coding-item", 2);
  await owner.s.byTest("coding-panel-button").click();
  assert.match(await owner.s.byTest("coding-blind-note").innerText(), /you run the study “Trips”/);
  assert.equal(await owner.s.byTest("coding-reveal").innerText(), "Reveal the study's codings");
  await screenshot(owner.page, "coding-study-reveal-1440");
  await owner.s.byTest("coding-reveal").click();
  await owner.page.waitForSelector('[data-testid="coding-state"][data-revealed="true"]', { timeout: T });
  assert.equal((await api(server, rhea, "GET", `/api/studies/${study.id}`)).reveal, true);

  // The coder's open studio follows: both codings, only theirs marked theirs.
  await coder.page.waitForFunction(
    () =>
      [...document.querySelectorAll('[data-testid="coding-item"]')].map((e) => e.dataset.mine).join() === "false,true",
    null,
    { timeout: T },
  );

  // The study's page hides them again; the coder's studio follows again.
  await owner.page.goto(`${server.base}/?study=${study.id}`);
  await owner.s.byTest("study-coding-state").waitFor({ timeout: T });
  assert.equal(await owner.s.byTest("study-coding-state").textContent(), "revealed");
  await owner.s.byTest("study-reveal").click();
  await owner.page.waitForFunction(
    () => document.querySelector('[data-testid="study-coding-state"]')?.textContent === "blind",
    null,
    { timeout: T },
  );
  await screenshot(owner.page, "study-coding-blind-1440");
  await coder.s.expectCount("coding-item", 1);
  assert.deepEqual([...owner.errors, ...coder.errors], []);
  await owner.ctx.close();
  await coder.ctx.close();
});
