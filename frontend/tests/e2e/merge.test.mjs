// Bringing a path back (issue "Bring a path back") against the real backend (SQLite,
// offline model) in Debian chromium: a sibling branch's todo is brought into the main
// path with its "Bring into current path…" action, one conflict (the objective) is
// settled in the preview, the apply says what came, the graph draws the merge node
// with a dashed merge edge, and dropping a card on the head opens the same preview.
// Screenshots land in frontend/test-results/.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openStudio, studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";

const T = 20_000;
const studio = studioFixture();

test("bring a todo from a sibling branch and settle one conflict", async () => {
  const { context, page, errors, s } = await openStudio(studio);

  // Main path 1, 2; a sibling branch 2.1 from step 1 with its own objective and todo.
  const root = await s.newConversation();
  await s.send("objective: Study cycling; todo: gather data");
  await s.send("objective: Study urban cycling; todo: write report");
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
  await s.expectHead(`${root}:1`);
  await s.send("objective: Study cycling safety; todo: interview riders");
  const sibling = s.nodeByLabel("2.1");
  await sibling.waitFor({ timeout: T });
  const siblingId = await sibling.getAttribute("data-node-id");

  // Back on the main path, bring the sibling's step in.
  await s.openFromHistory(root);
  await s.expectHead(`${root}:2`);
  await s.expectCount("todo-item", 2);
  await s.clickSettled(sibling.locator('[data-testid="graph-node-bring"]'));
  const dialog = s.byTest("merge-dialog");
  await dialog.waitFor({ timeout: T });
  const changes = dialog.locator('[data-testid="merge-change"]');
  await changes.first().waitFor({ timeout: T });
  assert.deepEqual(
    await changes.evaluateAll((items) => items.map((i) => [i.dataset.changeId.split(":")[0], i.dataset.conflict])),
    [
      ["objective", "true"],
      ["todo", "false"],
    ],
  );
  const conflict = changes.first();
  assert.match(await conflict.innerText(), /Study urban cycling/);
  assert.match(await conflict.innerText(), /Study cycling safety/);
  const apply = s.byTest("merge-apply");
  assert.equal(await apply.isDisabled(), true, "a conflict without a choice blocks the apply");
  await screenshot(page, "merge-1-preview");

  await conflict.locator('[data-testid="merge-choose-theirs"]').check();
  assert.equal(await apply.isDisabled(), false);
  await apply.click();
  const result = s.byTest("merge-result");
  await result.waitFor({ timeout: T });
  assert.match(await result.innerText(), /Brought in from 2\.1: objective, 1 todo/);
  await screenshot(page, "merge-2-applied");
  await s.byTest("merge-close").click();

  // The main path has the todo (same item), the sibling's objective, and a merge node
  // at its head, joined to the sibling's step by a dashed merge edge.
  await s.expectHead(`${root}:3`);
  await s.expectCount("todo-item", 3);
  assert.match(await page.locator('[data-testid="todo-item"]').last().innerText(), /interview riders/);
  await s.expectObjective("Study cycling safety");
  const mergeNode = s.node(`${root}:3`);
  assert.equal(await mergeNode.getAttribute("data-kind"), "merge");
  await mergeNode.locator('[data-testid="merge-node"]').waitFor({ timeout: T });
  const edge = page.locator(`.react-flow__edge.merge-edge[data-id="${siblingId}->${root}:3"]`);
  await edge.waitFor({ state: "attached", timeout: T });
  const dash = await edge.locator("path.react-flow__edge-path").getAttribute("style");
  assert.match(dash ?? "", /stroke-dasharray: 6(px)?,? 4/);
  // The chat shows the merge step where it falls, after step 2's restore point.
  const note = page.locator(`[data-testid="merge-note"][data-node-id="${root}:3"]`);
  await note.waitFor({ timeout: T });
  assert.match(await note.innerText(), /Step 3 ⤵ Brought in from 2\.1: objective, 1 todo/);
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:2"]`).waitFor({ timeout: T });
  await screenshot(page, "merge-3-graph");

  // Bringing the same step again: nothing left to bring.
  await s.clickSettled(sibling.locator('[data-testid="graph-node-bring"]'));
  await s.byTest("merge-empty").waitFor({ timeout: T });
  assert.equal(await s.byTest("merge-apply").isDisabled(), true);
  await s.byTest("merge-close").click();

  // Dropping a card on the head opens the same preview (the first step: nothing new).
  const from = await s.node(`${root}:1`).boundingBox();
  const to = await s.node(`${root}:3`).boundingBox();
  await page.mouse.move(from.x + from.width / 2, from.y + 12);
  await page.mouse.down();
  await page.mouse.move(to.x + to.width / 2, to.y + 12, { steps: 12 });
  await page.mouse.up();
  await dialog.waitFor({ timeout: T });
  assert.match(await dialog.innerText(), /Bring step 1 into the current path/);
  await s.byTest("merge-close").click();
  await dialog.waitFor({ state: "hidden", timeout: T });

  assert.deepEqual(errors, []);
  await context.close();
});

async function api(base, method, path, body) {
  const r = await fetch(`${base}/api${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!r.ok) assert.fail(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.status === 204 ? null : r.json();
}

async function editTodo(base, thread, text) {
  const ws = await api(base, "GET", `/conversations/${thread}/workspace`);
  const [todo] = ws.todos;
  await api(base, "PATCH", `/conversations/${thread}/todos/${todo.id}`, { text });
  return todo.uid;
}

test("a todo edited on both paths is settled field by field", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio);

  // Step 1 makes the todo; step 2 on the main path; the sibling 2.1 marks it done and
  // renames it by hand; the main path renames it too.
  const root = await s.newConversation();
  await s.send("todo: draft the survey");
  await s.send("prefer: plain words");
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:1"]`).click();
  await s.expectHead(`${root}:1`);
  await s.send("done todo 1");
  const sibling = s.nodeByLabel("2.1");
  await sibling.waitFor({ timeout: T });
  const siblingId = await sibling.getAttribute("data-node-id");
  const uid = await editTodo(server.base, siblingId.split(":")[0], "draft the riders' survey");
  await s.openFromHistory(root);
  await s.expectHead(`${root}:2`);
  // The head's card can show the move before the page shows the main path, and "Bring
  // into current path" brings into the path on screen: wait for its last message.
  await page.waitForFunction(
    () => {
      const asked = [...document.querySelectorAll('[data-testid="chat-message"][data-role="user"]')];
      return asked.length > 0 && /plain words/.test(asked[asked.length - 1].innerText);
    },
    null,
    { timeout: T },
  );
  assert.equal(await editTodo(server.base, root, "draft the city survey"), uid);

  await s.clickSettled(sibling.locator('[data-testid="graph-node-bring"]'));
  const dialog = s.byTest("merge-dialog");
  const change = dialog.locator(`[data-testid="merge-change"][data-change-id="todo:${uid}"]`);
  await change.waitFor({ timeout: T });
  assert.equal(await change.getAttribute("data-conflict"), "true");
  const fields = change.locator('[data-testid="merge-field"]');
  assert.deepEqual(await fields.evaluateAll((fs) => fs.map((f) => f.dataset.field)), ["text"]);
  assert.match(await change.innerText(), /Also brought in: done/);
  const apply = s.byTest("merge-apply");
  assert.equal(await apply.isDisabled(), true, "the text still needs a choice");
  await fields.first().locator('[data-testid="merge-field-ours"]').check();
  assert.equal(await apply.isDisabled(), false);
  await screenshot(page, "merge-4-fields");
  await apply.click();
  await s.byTest("merge-result").waitFor({ timeout: T });
  await s.byTest("merge-close").click();

  // The main path kept its own wording and took the sibling's "done".
  await s.expectHead(`${root}:3`);
  const ws = await api(server.base, "GET", `/conversations/${root}/workspace`);
  assert.deepEqual(
    ws.todos.map((t) => [t.uid, t.text, t.done]),
    [[uid, "draft the city survey", true]],
  );
  assert.deepEqual(errors, []);
  await context.close();
});

async function sendTurn(base, thread, content) {
  const r = await fetch(`${base}/api/conversations/${thread}/turns`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  const text = await r.text();
  assert.ok(r.ok, `send: ${r.status} ${text}`);
}

const seen = (ws) => ({
  objective: ws.objective,
  document: ws.document,
  todos: ws.todos.map((t) => [t.uid, t.text, t.done]),
  preferences: ws.preferences.map((p) => [p.uid, p.text]),
});

test("undoing a bring-in makes a new step with the workspace from before it", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  const root = (await api(server.base, "POST", "/conversations", { title: "Undo" })).thread_id;
  await sendTurn(server.base, root, "objective: plan; todo: read papers");
  const side = (await api(server.base, "POST", `/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await sendTurn(server.base, side, "objective: plan a survey; todo: interview riders");
  await api(server.base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:1` });
  await sendTurn(server.base, root, "todo: draft outline");
  const before = await api(server.base, "GET", `/conversations/${root}/workspace`);
  await page.goto(`${server.base}/?thread=${root}`);
  await s.expectCount("graph-node", 3);
  await s.expectCount("todo-item", 2);

  await s.clickSettled(s.node(`${side}:2`).locator('[data-testid="graph-node-bring"]'));
  const dialog = s.byTest("merge-dialog");
  await dialog.locator('[data-testid="merge-change"]').first().waitFor({ timeout: T });
  await s.byTest("merge-apply").click();
  await s.byTest("merge-result").waitFor({ timeout: T });
  await s.expectHead(`${root}:3`);
  await s.expectCount("todo-item", 3);

  await s.byTest("merge-undo").click();
  const undone = s.byTest("merge-undone");
  await undone.waitFor({ timeout: T });
  assert.match(await undone.innerText(), /Undid step 3: Brought in from 2\.1/);
  await screenshot(page, "merge-5-undone");
  await s.byTest("merge-close").click();

  // A new step 4 on the path, after the merge step (kept); the workspace is as before.
  await s.expectHead(`${root}:4`);
  await s.expectCount("graph-node", 5);
  assert.equal(await s.node(`${root}:3`).getAttribute("data-kind"), "merge");
  assert.equal(await s.node(`${root}:4`).getAttribute("data-kind"), "merge");
  await s.expectCount("todo-item", 2);
  await s.expectObjective("plan");
  const after = await api(server.base, "GET", `/conversations/${root}/workspace`);
  assert.deepEqual(seen(after), seen(before));
  const h = await api(server.base, "GET", `/conversations/${root}/history`);
  assert.equal(h.head_turn_id, `${root}:4`);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a document conflict picked line by line keeps a new paragraph from each side", async () => {
  const { server } = studio;
  const { context, page, errors, s } = await openStudio(studio, { width: 1440, height: 900 });
  // Each path appends two paragraphs at the same place (one conflicting hunk).
  const root = (await api(server.base, "POST", "/conversations", { title: "Lines" })).thread_id;
  await sendTurn(server.base, root, "objective: essay; write: Cycling is healthy.");
  const side = (await api(server.base, "POST", `/conversations/${root}/branch`, { from_turn: 1 })).thread_id;
  await sendTurn(server.base, side, "write: Bikes are cheap.");
  await sendTurn(server.base, side, "write: Bikes are quiet.");
  await api(server.base, "POST", `/conversations/${root}/checkout`, { turn_id: `${root}:1` });
  await sendTurn(server.base, root, "write: Lanes make cycling safe.");
  await sendTurn(server.base, root, "write: Lanes need money.");
  await page.goto(`${server.base}/?thread=${root}`);
  await s.expectCount("graph-node", 5);

  await s.clickSettled(s.node(`${side}:3`).locator('[data-testid="graph-node-bring"]'));
  const dialog = s.byTest("merge-dialog");
  const conflict = dialog.locator('[data-testid="merge-change"][data-conflict="true"]');
  await conflict.waitFor({ timeout: T });
  assert.match(await conflict.getAttribute("data-change-id"), /^document:/);
  await conflict.locator('[data-testid="merge-choose-lines"]').check();
  const lines = conflict.locator('[data-testid="merge-line"]');
  await lines.first().waitFor({ timeout: T });
  const listed = await lines.evaluateAll((boxes) =>
    boxes.map((b) => [b.dataset.side, b.closest("label").innerText.trim(), b.checked]),
  );
  assert.deepEqual(
    listed.map(([side, text]) => [side, text]),
    [
      ["ours", "Cycling is healthy."],
      ["ours", "(blank line)"],
      ["ours", "Lanes make cycling safe."],
      ["ours", "(blank line)"],
      ["ours", "Lanes need money."],
      ["theirs", "Cycling is healthy."],
      ["theirs", "(blank line)"],
      ["theirs", "Bikes are cheap."],
      ["theirs", "(blank line)"],
      ["theirs", "Bikes are quiet."],
    ],
  );
  assert.ok(
    listed.every(([, , checked]) => checked),
    "the pick starts from every line",
  );
  // Drop the step's repeated opening, "Lanes need money." and "Bikes are cheap.": the
  // last by keyboard (Tab from the one before it, then Space).
  const box = (side, text) =>
    conflict
      .locator(`[data-testid="merge-line"][data-side="${side}"]`)
      .nth(listed.filter(([sd]) => sd === side).findIndex(([, t]) => t === text));
  await box("theirs", "Cycling is healthy.").uncheck();
  await box("theirs", "(blank line)").uncheck();
  await box("ours", "Lanes need money.").uncheck();
  await box("theirs", "(blank line)").focus();
  await page.keyboard.press("Tab");
  await page.keyboard.press("Space");
  assert.equal(await box("theirs", "Bikes are cheap.").isChecked(), false, "Space unticks the focused line");
  assert.match(await conflict.locator(".merge-lines-count").innerText(), /6 of 10 lines kept/);
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 844 });
    await page.waitForTimeout(200);
    const outer = await dialog.boundingBox();
    const picker = await conflict.locator('[data-testid="merge-lines"]').boundingBox();
    assert.ok(picker.x >= outer.x && picker.x + picker.width <= outer.x + outer.width + 0.5, `fits at ${width}px`);
    await conflict.scrollIntoViewIfNeeded();
    await screenshot(page, `merge-6-line-pick-${width}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });
  await s.byTest("merge-apply").click();
  await s.byTest("merge-result").waitFor({ timeout: T });
  await s.byTest("merge-close").click();
  await s.expectHead(`${root}:4`);

  const ws = await api(server.base, "GET", `/conversations/${root}/workspace`);
  const paragraphs = ws.document.content.split("\n").filter((l) => l.trim() !== "");
  assert.deepEqual(paragraphs, ["Cycling is healthy.", "Lanes make cycling safe.", "Bikes are quiet."]);
  assert.deepEqual(errors, []);
  await context.close();
});
