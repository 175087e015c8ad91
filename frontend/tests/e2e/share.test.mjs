// Sharing: the owner makes a review link in the share dialog; a second browser opens
// it read-only (a banner, no composer), comments on a step, and the owner sees the
// note arrive live. Then the owner revokes the link and the reviewer is asked to sign in.
// A viewer finds the family in the history menu's shared group and is offered no write;
// an editor's step is "sent by" the editor in the owner's details.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { screenshot } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_AUTH: "token" });

/** A browser of its own, signed in with `token` on the landing page. */
async function signedIn(chrome, server, token) {
  const ctx = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.byTest("token-input").fill(token);
  await s.byTest("token-submit").click();
  return { ctx, page, s };
}

test("share a family by link: read-only for the reviewer, notes live for the owner", async () => {
  const { server, chrome } = studio;
  const token = server.createUser("owner");
  const { ctx: ownerCtx, page, s } = await signedIn(chrome, server, token);
  const thread = await s.newConversation();
  await s.send("objective: a shared study");
  await s.expectObjective("a shared study");
  await s.waitIdle();

  // The owner shares: a commenter link, shown once, listed with a revoke button.
  await s.byTest("share-button").click();
  const dialog = s.byTest("share-dialog");
  await dialog.waitFor();
  await s.byTest("share-role").selectOption("commenter");
  await s.byTest("share-expiry").selectOption({ label: "7 days" });
  await s.byTest("share-create").click();
  const linkInput = s.byTest("share-link");
  await linkInput.waitFor();
  const link = await linkInput.inputValue();
  assert.match(link, new RegExp(`\\?thread=${thread}&share=sh_`));
  await s.expectCount("share-item", 1);
  await screenshot(page, "share-dialog");
  await s.byTest("share-close").click();
  // The owner keeps the step's details open, to see notes arrive.
  await s.openDetails(`${thread}:1`);

  // A second browser opens the link: straight on the family, read-only, with a banner.
  const guestCtx = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const guest = await guestCtx.newPage();
  const g = new StudioPage(guest);
  await guest.goto(link);
  await g.byTest("shared-banner").waitFor();
  assert.match(await g.byTest("shared-banner").innerText(), /owner's family/);
  assert.match(await g.byTest("shared-banner").innerText(), /commenter/);
  await g.expectObjective("a shared study");
  await g.byTest("read-only-composer").waitFor();
  assert.equal(await g.byTest("message-input").count(), 0);
  assert.equal(await g.byTest("token-input").count(), 0);
  assert.equal(await g.byTest("share-button").count(), 0);
  // a link owns nothing: no new conversation, no import (the server refuses both)
  assert.equal(await g.byTest("new-conversation").count(), 0);
  await g.byTest("history-menu-button").click();
  await g.byTest("history-menu").waitFor();
  assert.equal(await g.byTest("import-button").count(), 0);
  await g.byTest("history-menu-button").click();
  assert.equal(await g.byTest("workspace-objective").isDisabled(), true);
  // a commenter may not rename the family: its title is text, without the pencil
  await g.byTest("title-text").waitFor();
  assert.equal(await g.byTest("title-edit").count(), 0);
  await screenshot(guest, "share-reviewer");

  // The reviewer comments on the step; the owner's open details show it without a reload.
  await g.openDetails(`${thread}:1`);
  const details = g.byTest("node-details");
  await details.waitFor();
  await details.locator('[data-testid="note-input"]').fill("Is the frame right here?");
  await details.locator('[data-testid="note-submit"]').click();
  await details.locator('[data-testid="note-item"]').waitFor();
  const ownerNote = s.byTest("node-details").locator('[data-testid="note-item"]');
  await ownerNote.waitFor({ timeout: 20_000 });
  assert.match(await ownerNote.innerText(), /Is the frame right here\?/);
  assert.match(await ownerNote.innerText(), /— link:/);
  // Only a note's writer may delete it: the reviewer is offered it, the owner is not.
  assert.equal(await details.locator('[data-testid="note-delete"]').count(), 1);
  assert.equal(await ownerNote.locator('[data-testid="note-delete"]').count(), 0);
  await screenshot(page, "share-owner-sees-note");

  // The owner revokes the link: the reviewer's next request asks for a token.
  await s.byTest("share-button").click();
  await s.byTest("share-revoke").click();
  await page.waitForSelector('[data-testid="share-item"][data-revoked="true"]');
  await guest.reload();
  await g.byTest("token-input").waitFor();
  await ownerCtx.close();
  await guestCtx.close();
});

test("a viewer continues as their own copy", async () => {
  const { server, chrome } = studio;
  const ownerToken = server.createUser("olga");
  const viewerToken = server.createUser("victor");
  const r = await fetch(`${server.base}/api/conversations`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ownerToken}` },
    body: JSON.stringify({ title: "olga's study" }),
  });
  const thread = (await r.json()).thread_id;
  const turn = await fetch(`${server.base}/api/conversations/${thread}/turns`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ownerToken}` },
    body: JSON.stringify({ content: "objective: olga's frame" }),
  });
  await turn.text();

  // The owner shares with victor by name in the dialog.
  const { ctx: ownerCtx, page, s } = await signedIn(chrome, server, ownerToken);
  await page.goto(`${server.base}/?thread=${thread}`);
  await s.expectObjective("olga's frame");
  await s.byTest("share-button").click();
  await s.byTest("share-user").fill("victor");
  await s.byTest("share-create").click();
  await page.waitForSelector('[data-testid="share-item"]');
  assert.match(await s.byTest("share-item").innerText(), /victor\s+viewer/);
  assert.equal(await s.byTest("share-link").count(), 0);
  await ownerCtx.close();

  // Victor opens it read-only, then continues as his own copy: a family he owns.
  const { ctx, page: guest, s: g } = await signedIn(chrome, server, viewerToken);
  await guest.goto(`${server.base}/?thread=${thread}`);
  await g.byTest("shared-banner").waitFor();
  assert.match(await g.byTest("shared-banner").innerText(), /olga's family.*viewer/s);
  assert.equal(await g.byTest("message-input").count(), 0);
  await g.byTest("continue-as-copy").click();
  await guest.waitForURL((u) => ![thread, null].includes(u.searchParams.get("thread")));
  await g.byTest("message-input").waitFor();
  assert.equal(await g.byTest("shared-banner").count(), 0);
  await g.expectObjective("olga's frame");
  await g.send("objective: victor's own frame");
  await g.expectObjective("victor's own frame");
  await screenshot(guest, "share-own-copy");
  await ctx.close();
});

async function api(server, token, method, path, body) {
  const r = await fetch(`${server.base}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
  // (a turn answers with its event stream: read to the end, nothing to parse)
  return text && !text.startsWith("event:") ? JSON.parse(text) : null;
}

test("a viewer is offered no write; an editor's step names the editor", async () => {
  const { server, chrome } = studio;
  const ownerToken = server.createUser("ada");
  const editorToken = server.createUser("ed");
  const viewerToken = server.createUser("vi");
  const thread = (await api(server, ownerToken, "POST", "/api/conversations", { title: "ada's study" })).thread_id;
  await api(server, ownerToken, "POST", `/api/conversations/${thread}/turns`, { content: "objective: ada's frame" });
  await api(server, ownerToken, "POST", `/api/conversations/${thread}/shares`, { role: "editor", user: "ed" });
  await api(server, ownerToken, "POST", `/api/conversations/${thread}/shares`, { role: "viewer", user: "vi" });
  await api(server, editorToken, "POST", `/api/conversations/${thread}/turns`, { content: "objective: ed's frame" });

  // The viewer finds the family in the history menu, in its own group, with the role.
  const { ctx, page: guest, s: g } = await signedIn(chrome, server, viewerToken);
  await g.byTest("history-menu-button").click();
  await g.byTest("shared-group").waitFor();
  const item = guest.locator(`[data-testid="conversation-item"][data-thread-id="${thread}"]`);
  assert.equal(await item.getAttribute("data-role"), "viewer");
  assert.match(await item.innerText(), /ada's study[\s\S]*by ada · 2 steps · viewer/);
  assert.equal(await item.locator('[data-testid="shared-role"]').innerText(), "viewer");
  await screenshot(guest, "share-history-menu");
  await item.click();
  await g.byTest("shared-banner").waitFor();
  await g.expectObjective("ed's frame");
  await g.node(`${thread}:2`).waitFor();

  // Read-only: no rename, restore, bring-in, branch name, tidy-up, note or what-if.
  await g.byTest("title-text").waitFor();
  assert.equal(await g.byTest("title-edit").count(), 0);
  assert.equal(await g.byTest("graph-node-restore").count(), 0);
  assert.equal(await g.byTest("graph-node-bring").count(), 0);
  assert.equal(await g.byTest("restore-divider").count(), 0);
  assert.equal(await g.byTest("branch-name").count(), 0);
  assert.equal(await g.byTest("suggestions-button").isVisible(), false);
  assert.equal(await g.byTest("workspace-objective").isDisabled(), true);
  await g.openDetails(`${thread}:2`);
  const details = g.byTest("node-details");
  await details.waitFor();
  await details.locator('[data-testid="node-author"]').waitFor();
  assert.equal(await details.locator('[data-testid="note-input"]').count(), 0);
  assert.equal(await details.locator('[data-testid="what-if"]').count(), 0);
  await screenshot(guest, "share-viewer-read-only");
  await ctx.close();

  // The owner sees who sent step 2, and that step 1 is the owner's own.
  const { ctx: ownerCtx, page, s } = await signedIn(chrome, server, ownerToken);
  await page.goto(`${server.base}/?thread=${thread}`);
  await s.expectObjective("ed's frame");
  await s.byTest("title-edit").waitFor();
  await s.openDetails(`${thread}:2`);
  const author = s.byTest("node-details").locator('[data-testid="node-author"]');
  await author.waitFor();
  assert.equal(await author.innerText(), "Sent by ed");
  await screenshot(page, "share-sent-by");
  await s.openDetails(`${thread}:1`);
  const first = page.locator(`[data-testid="node-details"][data-node-id="${thread}:1"]`);
  await first.locator('[data-testid="provenance"]').waitFor();
  assert.equal(await first.locator('[data-testid="node-author"]').count(), 0);
  await ownerCtx.close();
});
