// The browser half of `python -m bench.studio`: for each family given (the 200-node
// baseline first), in Debian's chromium via playwright-core, measure first paint, the
// requests a load repeats, pan/zoom frames per second, the time to show one added
// node, and the graph cards re-rendered while a 200-token reply streams. Prints one
// JSON line: {"results": [...]}.
import { launchBrowser } from "../e2e/harness.mjs";

const [base, familiesJson, debounceArg] = process.argv.slice(2);
// The server's summary_debounce_seconds: a branch's summary is written this long after
// it last grew.
const SUMMARY_DEBOUNCE_MS = Number(debounceArg ?? 2) * 1000;
const families = JSON.parse(familiesJson);
const VIEWPORT = { width: 1440, height: 900 };
/** Resolves once no request was added to `list` for a second (the event stream stays
 * open, so the page never reaches "networkidle"). */
async function quiet(list) {
  let seen = -1;
  while (seen !== list.length) {
    seen = list.length;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)];
};

async function firstPaint(browser, url) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const requests = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/") && !r.url().includes("/events")) requests.push(`${r.method()} ${r.url()}`);
  });
  await page.goto(url, { waitUntil: "commit" });
  // The mark is the animation frame whose page first holds a card; that frame's layout
  // and paint come after its callbacks, so a task queued from it (run after the paint)
  // marks the card on screen.
  const handle = await page.waitForFunction(
    () => {
      if (!document.querySelector('[data-testid="graph-node"]')) return null;
      setTimeout(() => (window.__haicoOnScreen = performance.now()), 0);
      return performance.now();
    },
    null,
    { timeout: 60_000, polling: "raf" },
  );
  const ms = await handle.jsonValue();
  const onScreen = await (await page.waitForFunction(() => window.__haicoOnScreen ?? null)).jsonValue();
  // What the first paint waited for: the bundle (the last script the page loaded before
  // the card), the graph request (its start and its end), and the rest (the layout and
  // the render after the graph arrived).
  const waits = await page.evaluate(
    ([paint, shown]) => {
      const entries = performance.getEntriesByType("resource").filter((e) => e.responseEnd <= paint);
      const scripts = entries.filter((e) => e.initiatorType === "script" || e.name.endsWith(".js"));
      const graph = entries.find((e) => /\/api\/conversations\/[^/]+\/graph/.test(e.name));
      const nav = performance.getEntriesByType("navigation")[0];
      return {
        html_ms: nav ? nav.responseEnd : null,
        bundle_ms: scripts.length ? Math.max(...scripts.map((e) => e.responseEnd)) : null,
        graph_start_ms: graph ? graph.startTime : null,
        graph_end_ms: graph ? graph.responseEnd : null,
        layout_ms: graph ? paint - graph.responseEnd : null,
        on_screen_ms: shown,
        bundle_kb: Math.round(scripts.reduce((n, e) => n + (e.encodedBodySize || 0), 0) / 1024),
      };
    },
    [ms, onScreen],
  );
  // Where the time went: each request's start and end, from the navigation on.
  const timeline = await page.evaluate(() =>
    performance
      .getEntriesByType("resource")
      .filter((e) => e.name.includes("/api/") || e.name.includes("/_next/"))
      .map((e) => `${Math.round(e.startTime)}-${Math.round(e.responseEnd)} ${new URL(e.name).pathname.slice(-40)}`),
  );
  if (process.env.HAICO_BENCH_TIMELINE) console.error(`first paint ${Math.round(ms)} ms\n  ${timeline.join("\n  ")}`);
  await quiet(requests);
  const repeated = requests.filter((r, i) => requests.indexOf(r) !== i).length;
  return { ms, repeated, page, context, waits };
}

async function panFps(page) {
  await page.locator(".react-flow__controls-fitview").click();
  await page.waitForTimeout(400);
  const box = await page.locator(".graph-body .react-flow__pane").boundingBox();
  await page.evaluate(() => {
    window.__frames = [];
    const tick = (t) => {
      window.__frames.push(t);
      if (window.__framesOn) requestAnimationFrame(tick);
    };
    window.__framesOn = true;
    requestAnimationFrame(tick);
  });
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  for (let i = 0; i < 60; i++) {
    await page.mouse.move(cx + Math.sin(i / 6) * 200, cy + Math.cos(i / 6) * 80);
    await page.waitForTimeout(16);
  }
  await page.mouse.up();
  for (let i = 0; i < 10; i++) {
    await page.mouse.wheel(0, i < 5 ? -120 : 120);
    await page.waitForTimeout(40);
  }
  const frames = await page.evaluate(() => {
    window.__framesOn = false;
    return window.__frames;
  });
  const gaps = frames.slice(1).map((t, i) => t - frames[i]);
  return 1000 / median(gaps);
}

async function addNode(page, thread) {
  const result = await page.evaluate(async (id) => {
    // Each card that comes into the page from now on, and the first frame it is in:
    // watched from here, not from a poll this script starts once it has read the
    // turn's start (that call waits for the page's main thread, busy drawing the card).
    const known = new Set([...document.querySelectorAll('[data-testid="graph-node"]')].map((e) => e.dataset.nodeId));
    window.__haicoCards = new Map();
    window.__haicoWatch = true;
    const watch = () => {
      const now = performance.now();
      for (const e of document.querySelectorAll('[data-testid="graph-node"]')) {
        const card = e.dataset.nodeId;
        if (!known.has(card) && !window.__haicoCards.has(card)) window.__haicoCards.set(card, now);
      }
      if (window.__haicoWatch) requestAnimationFrame(watch);
    };
    requestAnimationFrame(watch);
    const res = await fetch(`/api/conversations/${id}/turns`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: "todo: one more step" }),
    });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return null;
      text += decoder.decode(value, { stream: true });
      const m = text.match(/event: turn_started\ndata: (.*)\n/);
      if (m) {
        const started = performance.now();
        const node = JSON.parse(m[1]).node_id;
        void (async () => {
          while (!(await reader.read()).done);
        })();
        return { started, node };
      }
    }
  }, thread);
  const shown = await (
    await page.waitForFunction((node) => window.__haicoCards.get(node) ?? null, result.node, { timeout: 30_000 })
  ).jsonValue();
  await page.evaluate(() => {
    window.__haicoWatch = false;
  });
  // The clock starts when the page first knew of the turn: the studio's event stream
  // (the mark it makes on receiving turn_started) often delivers it before this
  // script's own request stream is read, and the page's main thread, busy drawing the
  // card, then reads that request late: timed from it alone, a card drawn 200 ms after
  // the event could measure 5 ms.
  const marks = await page.evaluate(
    (node) => performance.getEntriesByName(`haico:turn-started:${node}`).map((m) => m.startTime),
    result.node,
  );
  const started = Math.min(result.started, ...marks);
  const ms = shown - started;
  if (process.env.HAICO_BENCH_TIMELINE) {
    console.error(
      `add node: event at +${Math.round((marks[0] ?? NaN) - result.started)} ms, card at +${Math.round(shown - result.started)} ms (vs the turn's own stream)`,
    );
  }
  await page.waitForFunction(() => !document.querySelector('[data-testid="turn-status"]'), null, { timeout: 30_000 });
  return ms;
}

async function streamRenders(page) {
  const objective = Array.from({ length: 200 }, (_, i) => `w${i + 1}`).join(" ");
  const send = async (text) => {
    await page.locator('[data-testid="message-input"]').fill(text);
    await page.locator('[data-testid="send-button"]').click();
  };
  const requests = [];
  page.on("request", (r) => {
    if (r.url().includes("/api/") && !r.url().includes("/events")) requests.push(r.url());
  });
  await send(`objective: ${objective}`);
  await page.waitForFunction(() => !document.querySelector('[data-testid="turn-status"]'), null, { timeout: 30_000 });
  // The summary of the turns just made (this one and the added node's) is written a
  // debounce after them; the server holds it back while a turn runs, but one written
  // as the next turn starts is drawn while its reply streams: it changes the card that
  // shows it (the lane's first, in view), a change of the family and not a cost of
  // streaming. (It once rendered the lane's 55 cards, each carrying the summary; fixed
  // in features/graph/lib/graph.ts's turnCard.) So the reply is sent once the summary is in: past the
  // debounce, and no request made for a second (the refetch it causes answered).
  await page.waitForTimeout(SUMMARY_DEBOUNCE_MS + 500);
  await quiet(requests);
  // The window opens at the commit that draws the reply's 5th word and closes at the
  // one that draws its 200th, both read by a MutationObserver (it runs right after
  // React's commit, before any other task). A poll at each animation frame read them a
  // frame late, and on a loaded machine hundreds of ms late: long enough for the turn's
  // end to be drawn inside the window (the reply's last words, turn_completed, the
  // refetched history moving the head), whose cards legitimately change (the old and
  // the new head, the reply's own card once complete); that is after the reply streamed.
  await page.evaluate(() => {
    window.__haicoWindow = "before";
    const observer = new MutationObserver(() => {
      const reply = document.querySelector('[data-testid="chat-message"][data-role="assistant"].streaming');
      const text = reply?.textContent ?? "";
      if (window.__haicoWindow === "before" && text.includes("w5 ")) {
        window.__haicoRenders = {};
        window.__haicoWindow = "open";
      }
      if (window.__haicoWindow === "open" && text.includes("w200")) {
        window.__haicoWindow = { ...window.__haicoRenders };
        observer.disconnect();
      }
    });
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  });
  await send("wait: 4");
  const renders = await page.waitForFunction(
    () => (typeof window.__haicoWindow === "object" ? window.__haicoWindow : null),
    null,
    { timeout: 30_000 },
  );
  const counts = await renders.jsonValue();
  return Object.entries(counts)
    .filter(([name]) => name.startsWith("graph-node:"))
    .reduce((n, [, c]) => n + c, 0);
}

const chrome = await launchBrowser();
const results = [];
try {
  for (const f of families) {
    const url = `${base}/?thread=${f.root}`;
    const paints = [];
    let repeated = 0;
    let kept = null;
    // Cold: the first visit to this family, in a new browser context (nothing cached in
    // the browser) and the first time the server is asked for it; then warm: the median
    // of 3 more visits (each in a new context too, the server and the OS caches warm).
    const cold = await firstPaint(chrome.browser, url);
    await cold.context.close();
    for (let i = 0; i < 3; i++) {
      const run = await firstPaint(chrome.browser, url);
      paints.push(run.ms);
      repeated = Math.max(repeated, run.repeated);
      if (kept) await kept.context.close();
      kept = run;
    }
    const keptWaits = kept.waits;
    await kept.context.addInitScript(() => {
      window.__haicoRenders = {};
    });
    const page = kept.page;
    await page.evaluate(() => {
      window.__haicoRenders = {};
    });
    const fps = await panFps(page);
    const history = await page.evaluate(async (id) => (await fetch(`/api/conversations/${id}/history`)).json(), f.root);
    const addMs = await addNode(page, history.working_thread_id);
    const cardRenders = await streamRenders(page);
    await kept.context.close();
    results.push({
      nodes: f.nodes,
      branches: f.branches,
      first_paint_ms: median(paints),
      first_paint_cold_ms: cold.ms,
      cold_waits: cold.waits,
      warm_waits: keptWaits,
      repeated,
      fps,
      add_node_ms: addMs,
      card_renders: cardRenders,
    });
  }
} finally {
  await chrome.close();
}
console.log(JSON.stringify({ results }));
