/**
 * The first requests of a visit, sent before the studio's code has loaded.
 *
 * A link to a family (`/?thread=th_…`) is usually opened cold: nothing cached, so the
 * page spends its first few hundred milliseconds fetching and running the bundle, and
 * only then would it ask for the family's history and, once that names the working
 * thread, for its graph. `EARLY_SCRIPT` runs inline in the page's head, while the
 * bundle loads (an async module script: a classic one would wait for the stylesheet
 * React puts before it, hundreds of ms on a loaded machine): it sends the same two requests the studio would (same paths, same
 * token as the client's: the tab's participant token, the address's `share=` link or
 * the tab's, or the stored one) and leaves their promises on
 * `window`. The graph is asked for at once, for the thread in the address: that is
 * the working thread in the usual case, and the one the studio shows; when the history
 * names another working thread, that thread's graph is asked for as soon as it is
 * known. Once both answers are in and good, the script also parses them (`ready`),
 * while the bundle still loads, and the studio's history read takes both at once
 * (`takeEarlyAnswers`): the graph is in the query cache before the history is
 * answered, so the render the history brings draws the family, instead of asking for
 * the graph then and drawing it a render later. Otherwise the studio's first reads
 * take the answers (`earlyHistory`, `earlyGraph`), once each;
 * an answer that is not a success is dropped and the studio asks again through its
 * client, so a 401 still reaches the one 401 handler. Anything the script cannot do
 * (no thread in the address, a new conversation, no `fetch`) leaves the normal path
 * untouched.
 */

import type { History, Schemas } from "./client";

/** The global the inline script writes and the studio reads. */
const GLOBAL = "__haicoEarly";

/** The two answers, parsed by the inline script (null: either failed or was refused). */
interface Parsed {
  history: History;
  seq: string | null;
  thread: string;
  graph: Schemas["GraphOut"];
}

interface Early {
  thread: string;
  history?: Promise<Response>;
  graph?: Promise<{ thread: string; response: Response } | null>;
  ready?: Promise<Parsed | null>;
}

declare global {
  interface Window {
    [GLOBAL]?: Early;
  }
}

/** The inline script (plain ES5, no imports: it runs before anything else). The token
 * key is the client's `TOKEN_KEY`. */
export const EARLY_SCRIPT = `(function () {
  try {
    var q = new URLSearchParams(window.location.search);
    var thread = q.get("thread");
    if (!thread || q.get("new") === "1" || !/^th_[0-9a-f]{32}$/.test(thread) || !window.fetch) return;
    var tab = window.sessionStorage || null;
    var token =
      (tab && tab.getItem("haico.participant")) ||
      q.get("share") ||
      (tab && tab.getItem("haico.share")) ||
      window.localStorage.getItem("haico.token");
    var headers = { Accept: "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    var get = function (path) {
      return window.fetch("/api/conversations/" + path, { headers: headers });
    };
    var history = get(thread + "/history");
    var direct = get(thread + "/graph");
    var parsed = history.then(function (r) { return r.ok ? r.clone().json() : null; });
    var graph = parsed
      .then(function (h) {
        var working = h && h.working_thread_id;
        if (typeof working !== "string" || !/^th_[0-9a-f]{32}$/.test(working)) return null;
        var response = working === thread ? direct : get(working + "/graph");
        return response.then(function (r) { return { thread: working, response: r }; });
      })
      .catch(function () { return null; });
    var ready = Promise.all([history, parsed, graph])
      .then(function (a) {
        if (!a[1] || !a[2] || !a[2].response.ok) return null;
        return a[2].response.clone().json().then(function (g) {
          return { history: a[1], seq: a[0].headers.get("X-Haico-Server-Seq"), thread: a[2].thread, graph: g };
        });
      })
      .catch(function () { return null; });
    history.catch(function () {});
    direct.catch(function () {});
    window.${GLOBAL} = { thread: thread, history: history, graph: graph, ready: ready };
  } catch (e) {}
})();`;

/** The early answer for the history of `thread`, once (null: none was sent for it, or
 * it is taken, or it failed: ask the server as usual). */
export async function earlyHistory(thread: string): Promise<Response | null> {
  const early = typeof window === "undefined" ? undefined : window[GLOBAL];
  if (!early || early.thread !== thread || !early.history) return null;
  const pending = early.history;
  early.history = undefined;
  try {
    const response = await pending;
    return response.ok ? response : null;
  } catch {
    return null;
  }
}

/** The early answer for the graph of `thread` (the working thread the early history
 * named), once; null otherwise. */
export async function earlyGraph(thread: string): Promise<Response | null> {
  const early = typeof window === "undefined" ? undefined : window[GLOBAL];
  if (!early || !early.graph) return null;
  const pending = early.graph;
  try {
    const got = await pending;
    if (!got || got.thread !== thread) return null;
    if (early.graph !== pending) return null; // taken meanwhile
    early.graph = undefined;
    return got.response.ok ? got.response : null;
  } catch {
    return null;
  }
}

/** The early answers of a visit to `anchor`, parsed: its history (with the event
 * stream's start, `server_seq`) and its working thread's graph. */
export interface EarlyAnswers {
  history: History & { server_seq: number };
  thread: string;
  graph: Schemas["GraphOut"];
}

/** The early answers for `anchor`, once both came back good and neither was taken by
 * a read meanwhile; taking them leaves nothing for `earlyHistory` and `earlyGraph`
 * (the answers are the query cache's from then on). Null otherwise: the reads take
 * what there is, as usual. */
export async function takeEarlyAnswers(anchor: string): Promise<EarlyAnswers | null> {
  const early = typeof window === "undefined" ? undefined : window[GLOBAL];
  if (!early || early.thread !== anchor || !early.ready) return null;
  const { history, graph } = early;
  let got: Parsed | null;
  try {
    got = await early.ready;
  } catch {
    return null;
  }
  early.ready = undefined;
  if (got === null || history === undefined || early.history !== history || early.graph !== graph) return null;
  early.history = undefined;
  early.graph = undefined;
  const seq = Number(got.seq ?? "0");
  return {
    history: { ...got.history, server_seq: Number.isFinite(seq) ? seq : 0 },
    thread: got.thread,
    graph: got.graph,
  };
}
