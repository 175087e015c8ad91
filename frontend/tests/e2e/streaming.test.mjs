// A streamed reply re-renders the chat, never the trajectory's cards: the callbacks the
// cards are handed stay the same object while tokens arrive. The studio counts renders
// per component when the page sets `window.__haicoRenders` (lib/render-probe.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { studioFixture } from "./fixture.mjs";
import { StudioPage } from "./studio-page.mjs";

const studio = studioFixture();
const WORDS = 220;

// A page of the studio that counts each component's renders.
async function countingPage() {
  const { server, chrome } = studio;
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 720 } });
  await context.addInitScript(() => {
    window.__haicoRenders = {};
  });
  const page = await context.newPage();
  const s = new StudioPage(page);
  await page.goto(server.base);
  return { context, page, s };
}

test("streaming a 200-token reply re-renders no graph card", async (t) => {
  const { context, page, s } = await countingPage();
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

// At the end of a turn the head moves: the new card and the card that was the head (its
// "you are here" mark moved) render again, and a card whose content changed with the
// turn (the lane's summary on its first card, when it lands meanwhile), not every card
// in view: the cards' callbacks (restore acts on the head of the click's time) keep
// their identity.
test("a turn's end re-renders only the cards whose content changed, not every card in view", async (t) => {
  const { context, page, s } = await countingPage();
  const root = await s.newConversation();
  const EARLIER = 6;
  for (let i = 1; i <= EARLIER; i++) await s.send(`todo: step ${i}`);
  await s.expectCount("graph-node", EARLIER);
  await s.expectHead(`${root}:${EARLIER}`);
  // (the refetches the last turn set off have landed)
  await page.waitForTimeout(1500);

  // Each card as drawn, and its renders since the counts were reset, read in one go.
  const look = (reset) => {
    const panel = document.querySelector('[data-testid="graph-panel"] .react-flow')?.getBoundingClientRect();
    const cards = {};
    const inView = [];
    for (const n of document.querySelectorAll('[data-testid="graph-node"]')) {
      const id = n.getAttribute("data-node-id");
      cards[id] = n.outerHTML;
      const r = n.getBoundingClientRect();
      if (panel && r.right > panel.left && r.left < panel.right && r.bottom > panel.top && r.top < panel.bottom)
        inView.push(id);
    }
    const renders = { ...window.__haicoRenders };
    if (reset) window.__haicoRenders = {};
    return { cards, inView, renders };
  };
  const before = await page.evaluate(look, true);
  await s.send("todo: one more step");
  await s.expectCount("graph-node", EARLIER + 1);
  await s.expectHead(`${root}:${EARLIER + 1}`);
  await page.waitForTimeout(1500);
  const after = await page.evaluate(look, false);
  await context.close();

  const added = `${root}:${EARLIER + 1}`;
  const rendered = Object.keys(after.renders)
    .filter((name) => name.startsWith("graph-node:"))
    .map((name) => name.slice("graph-node:".length));
  t.diagnostic(`cards in view ${after.inView.length}; renders at the turn: ${JSON.stringify(after.renders)}`);
  // (the view opens legible on the newest steps: the older ones may lie outside it)
  assert.ok(after.inView.includes(added), "the new step is in view");
  assert.ok(rendered.includes(added), "the new card rendered");
  assert.notEqual(before.cards[`${root}:${EARLIER}`], after.cards[`${root}:${EARLIER}`], "the old head's mark moved");
  const needless = rendered.filter((id) => id !== added && before.cards[id] === after.cards[id]);
  assert.deepEqual(needless, [], `cards re-rendered with nothing changed: ${JSON.stringify(needless)}`);
  assert.ok(rendered.length <= 4, `${rendered.length} of ${EARLIER + 1} cards re-rendered`);
});
