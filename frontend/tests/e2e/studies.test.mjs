// Studies (token mode): the owner creates a two-condition study in the studio (one
// condition linear: no graph, no restore); two participants join through the join link
// in browsers of their own, consent and work; the owner's study page shows both rows
// and both conditions' figures updating live; a participant finishes; the CSV has both;
// a closed study refuses a third join in words. Screenshots at 1440 px and 390 px.
import AxeBuilder from "@axe-core/playwright";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_AUTH: "token" });
const T = 20_000;
const WIDE = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };
const CONSENT =
  "You take part in a study of writing with an AI assistant.\nYour messages are recorded under a pseudonym.";

/** A browser of its own, with the page's uncaught errors collected. */
async function browser(chrome, viewport = WIDE) {
  const ctx = await chrome.browser.newContext({ viewport });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  return { ctx, page, errors, s: new StudioPage(page) };
}

/** Both sizes of the same view. */
async function shots(page, name) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.setViewportSize(WIDE);
  await screenshot(page, `${name}-1440`);
  await page.setViewportSize(PHONE);
  await screenshot(page, `${name}-390`);
  await page.setViewportSize(WIDE);
}

/** axe's serious and critical findings on the page, at 1440 px and at 390 px. */
async function axe(page, view) {
  const found = [];
  for (const size of [WIDE, PHONE]) {
    await page.setViewportSize(size);
    await page.waitForTimeout(300);
    const result = await new AxeBuilder({ page })
      .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"])
      .analyze();
    for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
      found.push(
        `${view} ${size.width}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
      );
    }
  }
  await page.setViewportSize(WIDE);
  return found;
}

/** The owner's row of a participant: its text per column, once it says `want`. */
async function expectRow(page, participant, want) {
  const sel = `[data-testid="participant-row"][data-participant="${participant}"]`;
  try {
    await page.waitForFunction(
      ([s, w]) => {
        const row = document.querySelector(s);
        if (!row) return false;
        const got = {
          condition: row.getAttribute("data-condition"),
          state: row.getAttribute("data-state"),
          ...Object.fromEntries([...row.querySelectorAll("[data-count]")].map((c) => [c.dataset.count, c.textContent])),
        };
        return Object.entries(w).every(([k, v]) => String(got[k]) === String(v));
      },
      [sel, want],
      { timeout: T },
    );
  } catch (err) {
    const text = await page
      .locator(sel)
      .innerText()
      .catch(() => "(no row)");
    throw new Error(`${participant}: wanted ${JSON.stringify(want)}, the row reads ${text}\n${err}`);
  }
}

/** A condition's figure (`turns`, …) as its card shows it ("mean / median"). */
async function expectFigure(page, condition, figure, text) {
  await page.waitForFunction(
    ([c, f, t]) =>
      document
        .querySelector(`[data-testid="condition-metrics"][data-condition="${c}"] [data-figure="${f}"] dd`)
        ?.textContent?.trim() === t,
    [condition, figure, text],
    { timeout: T },
  );
}

test("a two-condition study: create, join by link, consent, work, watch live, finish, export", async () => {
  const { server, chrome } = studio;
  const token = server.createUser("researcher");
  const auth = { "content-type": "application/json", authorization: `Bearer ${token}` };
  // a codebook of the researcher's, for the study's coders
  const book = await (
    await fetch(`${server.base}/api/codebooks`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name: "Moves", codes: [{ name: "proposes" }, { name: "asks" }] }),
    })
  ).json();

  // The owner signs in and finds Studies in the conversations menu.
  const owner = await browser(chrome);
  const { page, s } = owner;
  await page.goto(server.base);
  await s.byTest("token-input").fill(token);
  await s.byTest("token-submit").click();
  await s.byTest("history-menu-button").click();
  await s.byTest("studies-link").click();
  await page.waitForURL((u) => u.searchParams.has("studies"));

  // No study yet: the form is open, with a branching and a linear condition.
  await s.byTest("study-form").waitFor();
  await s.byTest("study-name").fill("Op-ed co-writing");
  await s.byTest("study-objective").fill("Write a 200-word op-ed on city cycling");
  await s.byTest("study-document-title").fill("Op-ed");
  await s.byTest("study-document").fill("Cities should…");
  await s.byTest("study-preferences").fill("plain words");
  await s.byTest("study-todos").fill("outline\nfirst draft");
  await s.byTest("study-consent").fill(CONSENT);
  await s.byTest("study-codebook").selectOption({ label: "Moves (2 codes)" });
  const conditions = s.byTest("study-condition");
  assert.equal(await conditions.count(), 2);
  const linear = conditions.nth(1);
  assert.equal(await linear.locator('[data-testid="condition-name"]').inputValue(), "Linear");
  for (const f of ["graph", "branching", "merge", "whatif"]) {
    assert.equal(await conditions.nth(0).locator(`[data-testid="condition-${f}"]`).isChecked(), true, f);
    assert.equal(await linear.locator(`[data-testid="condition-${f}"]`).isChecked(), false, f);
  }
  // turning the linear condition's graph on and off again keeps restore off with it
  await linear.locator('[data-testid="condition-branching"]').check();
  assert.equal(await linear.locator('[data-testid="condition-graph"]').isChecked(), true);
  await linear.locator('[data-testid="condition-graph"]').uncheck();
  assert.equal(await linear.locator('[data-testid="condition-branching"]').isChecked(), false);
  await shots(page, "study-create");
  const formFindings = await axe(page, "new study");
  await s.byTest("study-create").click();

  // The study's page: the join link on the studio's origin, no one yet.
  await page.waitForURL((u) => /^sy_/.test(u.searchParams.get("study") ?? ""), { timeout: T });
  const created = new URL(page.url()).searchParams.get("study");
  const made = await (await fetch(`${server.base}/api/studies/${created}`, { headers: auth })).json();
  assert.equal(made.codebook_id, book.id, "the study names the codebook picked");
  const link = await s.byTest("study-join-link").inputValue();
  assert.match(link, new RegExp(`^${server.base}/\\?join=st_`));
  await s.byTest("participants-empty").waitFor();
  await page.waitForSelector('[data-testid="study-live"]:has-text("live")', { timeout: T });
  await s.expectCount("condition-metrics", 2);

  // P001 joins (the first condition: branching), reads the consent and agrees.
  const a = await browser(chrome);
  await a.page.goto(link);
  await a.s.byTest("consent-accept").waitFor({ timeout: T });
  // the join token left the address bar at once
  assert.equal(new URL(a.page.url()).searchParams.get("join"), null);
  assert.match(await a.s.byTest("consent-text").innerText(), /pseudonym/);
  await shots(a.page, "study-consent");
  const inaccessible = [...formFindings, ...(await axe(a.page, "consent"))];
  // the owner sees the join live, before any turn
  await expectRow(page, "P001", { condition: "Branching", state: "joined", turns: 0 });
  await a.s.byTest("consent-accept").click();
  await a.s.byTest("message-input").waitFor({ timeout: T });
  await a.s.expectObjective("Write a 200-word op-ed on city cycling");
  await a.s.expectCount("todo-item", 2);
  assert.match(await a.s.byTest("participant-id").innerText(), /P001/);
  // a participant sees no other family: no conversations menu, no new conversation, no share
  for (const id of ["history-menu-button", "new-conversation", "share-button", "search-input"]) {
    assert.equal(await a.s.byTest(id).count(), 0, id);
  }
  await a.s.send("todo: find sources");
  await a.s.send("write: Cities should build protected lanes.");
  await a.s.byTest("graph-panel").waitFor();
  await a.s.expectCount("graph-node", 2);
  await expectRow(page, "P001", { state: "consented", turns: 2 });

  // P002 joins (the linear condition), consents and works: a plain chat and the workspace.
  const b = await browser(chrome);
  await b.page.goto(link);
  await b.s.byTest("consent-accept").click();
  await b.s.byTest("message-input").waitFor({ timeout: T });
  assert.match(await b.s.byTest("participant-id").innerText(), /P002/);
  await b.s.send("todo: ask a cyclist");
  await b.s.send("write: Lanes save lives.");
  await b.s.expectCount("todo-item", 3);
  for (const id of ["graph-panel", "restore-divider", "sibling-switcher", "offshoot-chip", "graph-node"]) {
    assert.equal(await b.s.byTest(id).count(), 0, `the linear condition shows no ${id}`);
  }
  await shots(b.page, "study-participant-linear");

  // A reload keeps the participant: no second join, the same family, no consent again.
  const family = new URL(b.page.url()).searchParams.get("thread");
  await b.page.reload();
  await b.s.byTest("message-input").waitFor({ timeout: T });
  assert.equal(new URL(b.page.url()).searchParams.get("thread"), family);
  assert.match(await b.s.byTest("participant-id").innerText(), /P002/);
  // and the join link opened again in the same browser joins no one new
  await b.page.goto(link);
  await b.s.byTest("message-input").waitFor({ timeout: T });
  assert.equal(new URL(b.page.url()).searchParams.get("thread"), family);
  assert.equal(new URL(b.page.url()).searchParams.get("join"), null);

  // The branching participant restores step 1 and continues from it: a restore, a branch.
  await a.s.byTest("restore-divider").first().click();
  await a.page.waitForSelector('[data-testid="restore-banner"]', { timeout: T }).catch(() => {});
  await a.s.send("todo: a second angle");
  await a.s.expectCount("graph-node", 3);
  await shots(a.page, "study-participant-branching");

  // The owner's page followed all of it without a reload.
  await expectRow(page, "P001", { condition: "Branching", state: "consented", turns: 3, restores: 1, branches: 1 });
  await expectRow(page, "P002", { condition: "Linear", state: "consented", turns: 2, restores: 0, branches: 0 });
  await expectFigure(page, "Branching", "turns", "3 / 3");
  await expectFigure(page, "Linear", "turns", "2 / 2");
  await expectFigure(page, "Branching", "restores", "1 / 1");
  await s.expectCount("participant-row", 2);

  // P002 finishes: read-only from then on, said on screen; the owner sees it live.
  await b.s.byTest("finish-button").click();
  await b.s.byTest("finish-confirm").click();
  await b.s.byTest("finished-note").waitFor({ timeout: T });
  await b.s.byTest("finished-composer").waitFor();
  assert.equal(await b.s.byTest("message-input").count(), 0);
  assert.equal(await b.s.byTest("workspace-objective").isDisabled(), true);
  await shots(b.page, "study-participant-finished");
  await expectRow(page, "P002", { state: "finished" });
  await shots(page, "study-page");
  inaccessible.push(...(await axe(page, "study page")));
  assert.deepEqual(inaccessible, []);

  // The owner opens P001's family read-only.
  const p1 = await page.locator('[data-testid="participant-row"][data-participant="P001"] a').getAttribute("href");
  const reader = await owner.ctx.newPage();
  const r = new StudioPage(reader);
  await reader.goto(server.base + p1);
  await r.byTest("read-only-composer").waitFor({ timeout: T });
  await r.expectCount("graph-node", 3);
  assert.match(await r.byTest("shared-banner").innerText(), /participant.s family.*read it for its study/s);
  assert.equal(await r.byTest("message-input").count(), 0);
  // titled as the participant's family is (after the study), not as a new conversation
  await reader.waitForFunction(() => document.querySelector(".title-text")?.textContent === "Op-ed co-writing", null, {
    timeout: T,
  });
  await screenshot(reader, "study-reader-1440");
  await reader.close();

  // The CSV: both participants, `participant` and `condition` first, no name, no token.
  const downloading = page.waitForEvent("download");
  await s.byTest("study-export").click();
  const csv = readFileSync(await (await downloading).path(), "utf8");
  const [header, ...rows] = csv.trim().split(/\r?\n/);
  assert.match(header, /^participant,condition,/);
  assert.ok(rows.some((l) => l.startsWith("P001,Branching,")));
  assert.ok(rows.some((l) => l.startsWith("P002,Linear,")));
  assert.equal(csv.includes("researcher"), false);
  assert.equal(/\b(pt|st)_[A-Za-z0-9]/.test(csv), false);

  // Closed: the link takes no one new, and says so in words.
  await s.byTest("study-close").click();
  await page.waitForSelector('[data-testid="study-close"]:has-text("Open it again")', { timeout: T });
  const c = await browser(chrome);
  await c.page.goto(link);
  await c.s.byTest("error-banner").waitFor({ timeout: T });
  assert.match(await c.s.byTest("error-banner").innerText(), /closed/i);
  assert.equal(new URL(c.page.url()).searchParams.get("join"), null);
  await s.expectCount("participant-row", 2);

  for (const x of [owner, a, b, c]) assert.deepEqual(x.errors, []);
  for (const x of [owner, a, b, c]) await x.ctx.close();
});

test("a graph without branching, merge or what-if: none offered, and the server's refusal said in words", async () => {
  const { server, chrome } = studio;
  const token = server.createUser("graph-only");
  const made = await fetch(`${server.base}/api/studies`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({
      name: "Graph only",
      description: "",
      task: { objective: "Plan a trip" },
      conditions: [{ name: "Graph only", features: { graph: true, branching: false, merge: false, whatif: false } }],
    }),
  });
  assert.equal(made.status, 201);
  const study = await made.json();

  // no consent asked: the join goes straight to the studio
  const p = await browser(chrome);
  await p.page.goto(`${server.base}/?join=${study.join_token}`);
  await p.s.byTest("message-input").waitFor({ timeout: T });
  assert.equal(await p.s.byTest("consent-accept").count(), 0);
  const root = new URL(p.page.url()).searchParams.get("thread");
  await p.s.send("todo: book a train");
  await p.s.send("todo: find a hotel");
  await p.s.expectCount("graph-node", 2);
  // the graph, and on it no restore, no bring-in, no alternatives; no checkpoint dividers
  for (const id of ["graph-node-restore", "graph-node-bring", "graph-node-try-alternatives", "restore-divider"]) {
    assert.equal(await p.s.byTest(id).count(), 0, `no ${id}`);
  }
  assert.equal(await p.s.byTest("graph-node-details").count(), 2);
  const hint = await p.s.byTest("graph-hint").innerText();
  assert.equal(/restore|bring in|alternatives/.test(hint), false, hint);
  // nor in a step's menu (a long press, or Enter on the selected step)
  await p.page.keyboard.press("g");
  await p.page.keyboard.press("ArrowLeft");
  await p.page.keyboard.press("Enter");
  await p.s.byTest("step-menu").waitFor({ timeout: T });
  for (const id of ["step-menu-restore", "step-menu-bring", "step-menu-replay", "try-alternatives"]) {
    assert.equal(await p.s.byTest(id).count(), 0, `no ${id} in the step menu`);
  }
  await p.s.byTest("step-menu-close").click();

  // The restore key still asks the server, which refuses it: said in the banner, in words.
  await p.page.keyboard.press("g");
  await p.page.keyboard.press("ArrowLeft");
  await p.page.keyboard.press("r");
  await p.s.byTest("error-banner").waitFor({ timeout: T });
  assert.match(await p.s.byTest("error-banner").innerText(), /branching is turned off/i);
  await p.s.expectHead(`${root}:2`);
  await screenshot(p.page, "study-participant-graph-only-refused");
  assert.deepEqual(p.errors, []);
  await p.ctx.close();
});
