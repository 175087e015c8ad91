// A streamed reply re-renders the chat, never the trajectory's cards: the callbacks the
// cards are handed stay the same object while tokens arrive. The studio counts renders
// per component when the page sets `window.__haicoRenders` (lib/render-probe.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();
const WORDS = 220;

test("streaming a 200-token reply re-renders no graph card", async (t) => {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 720 } });
  await context.addInitScript(() => {
    window.__haicoRenders = {};
  });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  await s.newConversation();
  // The offline model's reply to `wait: N` quotes the objective whole, a word a token,
  // spread over N seconds: a long objective makes a long streamed reply.
  const objective = Array.from({ length: WORDS }, (_, i) => `w${i + 1}`).join(" ");
  await s.send(`objective: ${objective}`);
  await s.send("prefer: a second card on the graph");
  await s.expectCount("graph-node", 2);

  await s.byTest("message-input").fill("wait: 5");
  await s.byTest("send-button").click();
  // Once the turn's card is on the graph and the reply is under way, start counting.
  await page.waitForFunction(
    () => {
      const reply = document.querySelector('[data-testid="chat-message"][data-role="assistant"].streaming');
      const running = document.querySelector('[data-testid="graph-node"][data-state="running"]');
      if (running === null || !(reply?.textContent ?? "").includes("w5 ")) return false;
      window.__haicoRenders = {};
      return true;
    },
    null,
    { timeout: 20_000, polling: "raf" },
  );
  // Read the counts in the same frame that sees the objective's last word streamed, while
  // the rest of the reply is still coming.
  const counts = await page.waitForFunction(
    (last) => {
      const reply = document.querySelector('[data-testid="chat-message"][data-role="assistant"].streaming');
      if (!(reply?.textContent ?? "").includes(last)) return null;
      const graphCards = document.querySelectorAll('[data-testid="graph-node"]').length;
      return { renders: { ...window.__haicoRenders }, graphCards };
    },
    `w${WORDS}”`,
    { timeout: 30_000, polling: "raf" },
  );
  const { renders, graphCards } = await counts.jsonValue();
  await s.waitIdle();
  await context.close();

  assert.equal(graphCards, 3, "the two earlier steps and the running one are drawn");
  const cardRenders = Object.entries(renders).filter(([name]) => name.startsWith("graph-node:"));
  t.diagnostic(`while the reply streamed: chat ${renders.chat ?? 0} renders, cards ${JSON.stringify(cardRenders)}`);
  // The chat did follow the stream token by token (about 200 tokens in the window).
  assert.ok((renders.chat ?? 0) >= 50, `the chat rendered ${renders.chat ?? 0} times while ${WORDS} words streamed`);
  assert.deepEqual(cardRenders, [], `graph cards re-rendered while the reply streamed: ${JSON.stringify(cardRenders)}`);
});
