// Token mode: the studio asks for the token once, keeps it, and sends it as Bearer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_AUTH: "token" });

test("token mode: sign in once, then use the studio", async () => {
  const { server, chrome } = studio;
  const token = server.createUser("e2e");
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.byTest("token-input").waitFor();
  await screenshot(page, "token-sign-in");
  await s.byTest("token-input").fill(token);
  await s.byTest("token-submit").click();
  const thread = await s.newConversation();
  await s.send("objective: signed in");
  await s.expectObjective("signed in");
  // Asked once: a reload goes straight back to the conversation.
  await page.reload();
  await s.expectObjective("signed in");
  assert.equal(await s.byTest("token-input").count(), 0);
  assert.match(page.url(), new RegExp(thread));

  // The research features carry the token too: search (the typed client), export (a
  // fetch with the header, then a blob download) and import (an XHR upload).
  await s.byTest("search-input").fill("signed");
  await page.locator(`[data-testid="search-result"][data-node-id="${thread}:1"]`).first().waitFor();
  await s.byTest("search-input").press("Escape");
  await s.byTest("history-menu-button").click();
  const downloading = page.waitForEvent("download");
  await page.locator(`[data-testid="conversation-item"][data-thread-id="${thread}"]`).hover();
  await page
    .locator(
      `li:has([data-testid="conversation-item"][data-thread-id="${thread}"]) [data-testid="conversation-export"]`,
    )
    .click();
  const file = await (await downloading).path();
  await s.byTest("history-menu-button").click();
  await s.byTest("import-input").setInputFiles(file);
  await page.waitForURL((u) => ![thread, null].includes(u.searchParams.get("thread")));
  await s.expectCount("graph-node", 1);
  await s.expectObjective("signed in");
  assert.equal(await s.byTest("token-input").count(), 0);

  // The token is rotated mid-session: the next send is answered 401 and the studio
  // asks again, keeping the message; after signing in it goes through, and the
  // family's event stream follows again (a script's turn shows up without a reload).
  const imported = new URL(page.url()).searchParams.get("thread");
  const fresh = server.rotateToken("e2e");
  await s.byTest("message-input").fill("todo: after the rotation");
  await s.byTest("send-button").click();
  await s.byTest("token-input").waitFor();
  await screenshot(page, "token-asked-again");
  await s.byTest("token-input").fill(fresh);
  await s.byTest("token-submit").click();
  await s.byTest("token-input").waitFor({ state: "detached" });
  await page.waitForFunction(
    () => document.querySelector('[data-testid="message-input"]')?.value === "todo: after the rotation",
  );
  await s.byTest("send-button").click();
  await s.expectCount("todo-item", 1);
  await s.waitIdle();
  const script = await fetch(`${server.base}/api/conversations/${imported}/turns`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${fresh}` },
    body: JSON.stringify({ content: "todo: from a script" }),
  });
  assert.equal(script.status, 200);
  await script.text();
  await s.expectCount("todo-item", 2);

  // The draft is kept per conversation, in the tab: across a reload too.
  await s.byTest("message-input").fill("half a thought");
  await page.reload();
  await page.waitForFunction(() => document.querySelector('[data-testid="message-input"]')?.value === "half a thought");
  await context.close();
});
