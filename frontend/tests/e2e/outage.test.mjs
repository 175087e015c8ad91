// What the researcher typed is never lost to a request the server did not take: a
// message goes back into the composer, a new todo stays in its field, a new title in
// its editor, an edited objective stays edited and marked unsaved until a retry saves
// it, each with the reason on the banner, whether the server was down (a real outage:
// the backend is stopped and started again on the same data) or refused the send
// (409). The "could not be reached" banner goes away by itself once the server is back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const VIEWPORT = { width: 1280, height: 720 };
const studio = studioFixture();

async function userMessages(page) {
  return page.locator('[data-testid="chat-message"][data-role="user"]').allInnerTexts();
}

test("a send that fails keeps the message; the banner clears when the server is back", async () => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.newConversation();
  await s.send("objective: Survive an outage; todo: first");
  await s.expectCount("todo-item", 1);
  // The turn is over as the studio knows it (the composer is free) before the server goes:
  // a turn whose end the studio had not yet heard keeps the composer locked until it is back.
  await s.waitIdle();
  await s.byTest("stop-button").waitFor({ state: "hidden" });

  // The server goes away; the message typed now must survive the failed send.
  await server.pause();
  const lost = "todo: written while the server was down";
  await s.byTest("message-input").fill(lost);
  await s.byTest("send-button").click();
  await s.byTest("error-banner").waitFor();
  assert.match(await s.byTest("error-banner").innerText(), /could not be reached/);
  await s.waitIdle();
  assert.equal(await s.byTest("message-input").inputValue(), lost);
  assert.equal((await userMessages(page)).length, 1);

  // Workspace edits made meanwhile: a new todo stays in its field, an edited objective
  // stays in its field, each with the same notice.
  await s.byTest("error-banner").locator("button").click();
  await s.byTest("todo-new").fill("added by hand while down");
  await s.byTest("todo-new").press("Enter");
  await s.byTest("error-banner").waitFor();
  assert.match(await s.byTest("error-banner").innerText(), /could not be reached/);
  await page.waitForFunction(
    () => document.querySelector('[data-testid="todo-new"]')?.value === "added by hand while down",
  );
  await s.byTest("workspace-objective").fill("Survive any outage");
  await s.byTest("workspace-objective").press("Enter");
  await page.waitForTimeout(300);
  assert.equal(await s.objective(), "Survive any outage");
  await s.byTest("objective-unsaved").waitFor();
  await screenshot(page, "outage-01-message-kept");

  // A new title typed in the history menu comes back in its editor.
  await s.byTest("error-banner").locator("button").click();
  await s.byTest("history-menu-button").click();
  await page.locator(".history-menu li.current").hover();
  await s.byTest("conversation-rename").click();
  await s.byTest("rename-input").fill("Outage notes");
  await s.byTest("rename-input").press("Enter");
  await s.byTest("error-banner").waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="rename-input"]')?.value === "Outage notes");
  await s.byTest("history-menu-button").click();

  // Back: the studio's event stream reconnects and the stale banner goes.
  await server.resume();
  await s.byTest("error-banner").waitFor({ state: "hidden", timeout: 30_000 });
  await s.byTest("todo-new").press("Enter");
  await s.expectCount("todo-item", 2);
  // Another client changes the objective meanwhile: the unsaved edit stays on screen.
  const thread = new URL(page.url()).searchParams.get("thread");
  const elsewhere = await fetch(`${server.base}/api/conversations/${thread}/turns`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: "objective: Changed elsewhere" }),
  });
  await elsewhere.text();
  await s.expectCount("graph-node", 2);
  await page.waitForTimeout(500);
  assert.equal(await s.objective(), "Survive any outage");
  assert.equal(await s.byTest("objective-unsaved").isVisible(), true);
  await s.byTest("workspace-objective").focus();
  await s.byTest("workspace-objective").press("Enter");
  await page.waitForFunction(
    async (url) => (await (await fetch(url)).json()).objective === "Survive any outage",
    `${server.base}/api/conversations/${thread}/workspace`,
  );
  await s.byTest("objective-unsaved").waitFor({ state: "hidden" });
  await s.byTest("send-button").click();
  await s.expectCount("todo-item", 3);
  await s.waitIdle();
  assert.equal(await s.byTest("message-input").inputValue(), "");
  assert.equal((await userMessages(page)).length, 3);

  // A refusal (another client's turn began first): the message comes back too, ahead
  // of anything typed while the refusal was on its way.
  let release;
  const answered = new Promise((r) => (release = r));
  await page.route("**/turns", async (route) => {
    await answered;
    await route.fulfill({
      status: 409,
      contentType: "application/json",
      body: JSON.stringify({ code: "turn_in_progress", message: "A turn is already running in this conversation." }),
    });
  });
  await s.byTest("message-input").fill("todo: refused");
  await s.byTest("send-button").click();
  await s.byTest("turn-status").waitFor();
  await s.byTest("message-input").fill("and typed meanwhile");
  release();
  await s.byTest("error-banner").waitFor();
  assert.match(await s.byTest("error-banner").innerText(), /already running/);
  await s.waitIdle();
  assert.equal(await s.byTest("message-input").inputValue(), "todo: refused\nand typed meanwhile");
  await page.unroute("**/turns");
  await s.send("todo: refused");
  await s.expectCount("todo-item", 4);
  assert.equal((await userMessages(page)).length, 4);
  await screenshot(page, "outage-02-sent-after");
  await context.close();
});
