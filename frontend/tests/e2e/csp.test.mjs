// The studio works under its content security policy: the pages load, a turn streams,
// the graph draws, and the browser reports no violation of the policy; the server's
// pages cannot be framed. A review link's token leaves the address bar once read.
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture({ HAICO_AUTH: "token" });

/** A page whose policy violations and uncaught errors are collected. */
async function watched(chrome) {
  const ctx = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`error: ${e}`));
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error(`Refused to load: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return { ctx, page, problems, s: new StudioPage(page) };
}

test("the studio runs under its policy, and a share token leaves the address bar", async () => {
  const { server, chrome } = studio;
  const token = server.createUser("owner");
  const { ctx, page, problems, s } = await watched(chrome);
  const response = await page.goto(server.base);
  const csp = response.headers()["content-security-policy"];
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(response.headers()["x-content-type-options"], "nosniff");
  await s.byTest("token-input").fill(token);
  await s.byTest("token-submit").click();
  const thread = await s.newConversation();
  await s.send("objective: under a policy; todo: one");
  await s.expectObjective("under a policy");
  await s.waitIdle();
  await s.node(`${thread}:1`).waitFor();
  await page.reload();
  await s.node(`${thread}:1`).waitFor();
  assert.deepEqual(problems, []);

  // A review link: the studio reads its token, then the address keeps only the thread.
  const made = await fetch(`${server.base}/api/conversations/${thread}/shares`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ role: "viewer" }),
  });
  assert.equal(made.status, 201);
  const link = `${server.base}/?thread=${thread}&share=${(await made.json()).token}`;
  const guest = await watched(chrome);
  await guest.page.goto(link);
  await guest.s.byTest("shared-banner").waitFor();
  const url = new URL(guest.page.url());
  assert.equal(url.searchParams.get("share"), null);
  assert.equal(url.searchParams.get("thread"), thread);
  // The tab keeps acting through the link after a reload.
  await guest.page.reload();
  await guest.s.byTest("shared-banner").waitFor();
  assert.deepEqual(guest.problems, []);

  // Framed by another origin: the browser refuses to render it.
  const framer = await ctx.newPage();
  await framer.setContent(`<iframe id="f" src="${server.base}/"></iframe>`);
  await framer.waitForTimeout(1000);
  const framed = framer.frames().find((f) => f !== framer.mainFrame());
  assert.ok(!framed || !(await framed.content()).includes("__next"), "the studio rendered in a frame");
  await guest.ctx.close();
  await ctx.close();
});
