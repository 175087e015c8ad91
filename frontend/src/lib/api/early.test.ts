import { afterEach, describe, expect, it } from "vitest";
import { EARLY_SCRIPT, earlyGraph, earlyHistory, takeEarlyAnswers } from "./early";

const ROOT = `th_${"a".repeat(32)}`;
const WORKING = `th_${"b".repeat(32)}`;

interface Sent {
  url: string;
  headers: Record<string, string | undefined>;
}

/** A page at `search`, with `token` stored; runs the inline script in it and installs
 * it as the global window. `answer` gives each request's status and body. */
function page(
  search: string,
  token: string | null,
  answer: (url: string) => [number, unknown],
  tab: Record<string, string> | null = null,
) {
  const sent: Sent[] = [];
  const win: Record<string, unknown> = {
    location: { search },
    localStorage: { getItem: (k: string) => (k === "haico.token" ? token : null) },
    ...(tab === null ? {} : { sessionStorage: { getItem: (k: string) => tab[k] ?? null } }),
    fetch: (url: string, init: { headers: Record<string, string> }) => {
      sent.push({ url, headers: init.headers });
      const [status, body] = answer(url);
      return Promise.resolve(new Response(JSON.stringify(body), { status, headers: { "X-Haico-Server-Seq": "7" } }));
    },
  };
  new Function("window", EARLY_SCRIPT)(win);
  (globalThis as { window?: unknown }).window = win;
  return sent;
}

const ok = (url: string): [number, unknown] =>
  url.endsWith("/history") ? [200, { working_thread_id: WORKING, head_turn_id: null }] : [200, { nodes: [1, 2] }];

afterEach(() => {
  delete (globalThis as { window?: unknown }).window;
});

describe("the early requests of a cold visit", () => {
  it("asks for the family's history, then its working thread's graph, with the stored token", async () => {
    const sent = page(`?thread=${ROOT}`, "tok", ok);
    const history = await earlyHistory(ROOT);
    expect(history?.headers.get("X-Haico-Server-Seq")).toBe("7");
    expect(await history?.json()).toEqual({ working_thread_id: WORKING, head_turn_id: null });
    const graph = await earlyGraph(WORKING);
    expect(await graph?.json()).toEqual({ nodes: [1, 2] });
    // the address's graph at once (in case it is the working thread), then the working one's
    expect(sent.map((s) => s.url)).toEqual([
      `/api/conversations/${ROOT}/history`,
      `/api/conversations/${ROOT}/graph`,
      `/api/conversations/${WORKING}/graph`,
    ]);
    expect(sent[0]?.headers.Authorization).toBe("Bearer tok");
    // each answer is taken once: later reads ask the server
    expect(await earlyHistory(ROOT)).toBeNull();
    expect(await earlyGraph(WORKING)).toBeNull();
  });

  it("asks for the graph once when the address names the working thread", async () => {
    const sent = page(`?thread=${WORKING}`, null, ok);
    expect(await (await earlyGraph(WORKING))?.json()).toEqual({ nodes: [1, 2] });
    expect(sent.map((s) => s.url)).toEqual([
      `/api/conversations/${WORKING}/history`,
      `/api/conversations/${WORKING}/graph`,
    ]);
  });

  it("sends a share link's token, and none with auth off", () => {
    expect(page(`?thread=${ROOT}&share=sh_x`, "tok", ok)[0]?.headers.Authorization).toBe("Bearer sh_x");
    expect(page(`?thread=${ROOT}`, null, ok)[0]?.headers.Authorization).toBeUndefined();
  });

  it("sends the tab's token as the client does: a participant's, then a review link's, then the stored one", () => {
    const auth = (tab: Record<string, string>, search = `?thread=${ROOT}`) =>
      page(search, "tok", ok, tab)[0]?.headers.Authorization;
    expect(auth({ "haico.participant": "pt_p", "haico.share": "sh_s" })).toBe("Bearer pt_p");
    expect(auth({ "haico.share": "sh_s" })).toBe("Bearer sh_s");
    expect(auth({ "haico.share": "sh_s" }, `?thread=${ROOT}&share=sh_new`)).toBe("Bearer sh_new");
    expect(auth({})).toBe("Bearer tok");
  });

  it("leaves every other visit alone", async () => {
    expect(page("", null, ok)).toEqual([]);
    expect(page(`?thread=${ROOT}&new=1`, null, ok)).toEqual([]);
    expect(page("?thread=../etc", null, ok)).toEqual([]);
    expect(await earlyHistory(ROOT)).toBeNull();
    expect(await earlyGraph(ROOT)).toBeNull();
  });

  it("gives up a refused answer, and a graph of another thread", async () => {
    page(`?thread=${ROOT}`, "old", () => [401, { code: "unauthorized" }]);
    expect(await earlyHistory(ROOT)).toBeNull();
    expect(await earlyGraph(WORKING)).toBeNull();
    page(`?thread=${ROOT}`, null, ok);
    expect(await earlyHistory(WORKING)).toBeNull(); // another family's
    expect(await earlyGraph(ROOT)).toBeNull(); // not the working thread
    expect(await earlyGraph(WORKING)).not.toBeNull();
  });

  it("does nothing outside a browser", async () => {
    expect(await earlyHistory(ROOT)).toBeNull();
    expect(await earlyGraph(ROOT)).toBeNull();
  });

  it("hands the parsed answers over once, for the query cache", async () => {
    const sent = page(`?thread=${ROOT}`, null, ok);
    expect(await takeEarlyAnswers(WORKING)).toBeNull(); // not the address's thread
    const answers = await takeEarlyAnswers(ROOT);
    expect(answers).toEqual({
      history: { working_thread_id: WORKING, head_turn_id: null, server_seq: 7 },
      thread: WORKING,
      graph: { nodes: [1, 2] },
    });
    // taken: nothing left for the reads, and no request sent again
    expect(await takeEarlyAnswers(ROOT)).toBeNull();
    expect(await earlyHistory(ROOT)).toBeNull();
    expect(await earlyGraph(WORKING)).toBeNull();
    expect(sent).toHaveLength(3);
  });

  it("hands nothing over when an answer failed, and leaves the rest to the reads", async () => {
    page(`?thread=${ROOT}`, null, (url) => (url.endsWith("/history") ? ok(url) : [500, { code: "internal" }]));
    expect(await takeEarlyAnswers(ROOT)).toBeNull();
    // the history is still the reads' to take; the failed graph is dropped
    expect(await (await earlyHistory(ROOT))?.json()).toEqual({ working_thread_id: WORKING, head_turn_id: null });
    expect(await earlyGraph(WORKING)).toBeNull();

    page(`?thread=${ROOT}`, "old", () => [401, { code: "unauthorized" }]);
    expect(await takeEarlyAnswers(ROOT)).toBeNull();
  });

  it("hands nothing over once a read took an answer (the reads then own them)", async () => {
    page(`?thread=${ROOT}`, null, ok);
    const taking = takeEarlyAnswers(ROOT);
    expect(await earlyHistory(ROOT)).not.toBeNull();
    expect(await taking).toBeNull();
    expect(await earlyGraph(WORKING)).not.toBeNull();
  });
});
