// The screenshots of docs/quickstart.md: the quick start's walk through the studio
// (create, three turns, restore, branch, history menu, token sign-in) against a real
// backend (SQLite in a temp dir, offline model) in Debian chromium.
//
//   make quickstart-shots        (or: cd frontend && node tests/e2e/quickstart-shots.mjs)
//
// Not a test (no *.test.mjs): CI does not run it. It writes docs/quickstart/NN-*.png;
// look at every picture before committing it.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launchBrowser, repoDir, startBackend } from "./harness.mjs";
import { StudioPage } from "./studio-page.mjs";

const OUT = join(repoDir, "docs", "quickstart");
const VIEWPORT = { width: 1280, height: 800 };

async function shot(page, name) {
  mkdirSync(OUT, { recursive: true });
  await page.waitForTimeout(600); // the graph re-frames with a short animation
  const path = join(OUT, `${name}.png`);
  await page.screenshot({ path });
  console.log(`wrote ${path}`);
}

async function walk(server, chrome) {
  const context = await chrome.browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const s = new StudioPage(page);

  await page.goto(server.base);
  await page.waitForLoadState("networkidle");
  await shot(page, "01-open");

  const root = await s.newConversation();
  await s.byTest("graph-panel").waitFor();
  await s.send("objective: Argue for bike lanes; prefer: short sentences; todo: outline the argument");
  await s.expectObjective("Argue for bike lanes");
  await shot(page, "02-first-turn");

  await s.send("write: Cities are for people.; subtodo: find statistics");
  await s.expectCount("todo-item", 2);
  await s.send("objective: Argue formally for bike lanes; prefer: cite sources; artifact Sources: city report 2024");
  await s.expectCount("graph-node", 3);
  await s.expectHead(`${root}:3`);
  await shot(page, "03-three-turns");

  // Restore step 2 through its "Saved checkpoint" divider in the chat.
  await page.locator(`[data-testid="restore-divider"][data-node-id="${root}:2"]`).click();
  await s.expectHead(`${root}:2`);
  await s.expectObjective("Argue for bike lanes");
  await shot(page, "04-restored-step-2");

  // Sending from the restored step continues on a new branch, 3.1.
  await s.send("todo: survey cyclists");
  await s.nodeByLabel("3.1").waitFor();
  await s.expectCount("graph-node", 4);
  await shot(page, "05-branch-3-1");

  // The Conversations menu: the branch nested under its parent.
  await s.byTest("history-menu-button").click();
  await page.locator('[data-testid="conversation-item"]').nth(1).waitFor();
  await shot(page, "06-history-menu");
  await context.close();
}

async function tokenMode(chrome) {
  const server = await startBackend({ HAICO_AUTH: "token" });
  try {
    const context = await chrome.browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    const s = new StudioPage(page);
    await page.goto(server.base);
    await s.byTest("token-input").waitFor();
    await shot(page, "07-token-sign-in");
    await context.close();
  } finally {
    await server.stop();
  }
}

const chrome = await launchBrowser();
const server = await startBackend();
try {
  await walk(server, chrome);
  await tokenMode(chrome);
} finally {
  await server.stop();
  await chrome.close();
}
