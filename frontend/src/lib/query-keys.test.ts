import { describe, expect, it } from "vitest";
import { mergeEffects, noEffects } from "./events";
import { every, FAMILY_STALE, keys, staleQueries, TURN_STALE } from "./query-keys";

describe("query keys", () => {
  it("start every key of a kind with that kind's prefix", () => {
    expect(keys.history("R")).toEqual(["history", "R"]);
    expect(keys.graph("R").slice(0, 1)).toEqual(every.graph);
    expect(keys.messages("R").slice(0, 1)).toEqual(every.messages);
    expect(keys.workspace("R").slice(0, 1)).toEqual(every.workspace);
    expect(keys.artifact("R", 3)).toEqual(["artifact", "R", 3]);
    expect(keys.compare("a", "b")).toEqual(["compare", "a", "b"]);
    expect(keys.search("bike")).toEqual(["search", "bike"]);
    expect(keys.conversations).toEqual(["conversations"]);
    expect(keys.node("R", 2)).toEqual(["ledger", "node", "R", 2]);
    expect(keys.edits("R").slice(0, 1)).toEqual(every.ledger);
    expect(keys.usage("R")).toEqual(["ledger", "usage", "R"]);
    expect(keys.profiles).toEqual(["whatif", "profiles"]);
    expect(keys.branchProfile("R")).toEqual(["whatif", "branch", "R"]);
    expect(keys.job("j")).toEqual(["whatif", "job", "j"]);
    expect(keys.comparePaths("a", "b")).toEqual(["whatif", "paths", "a", "b"]);
  });

  it("refresh after a checkout what a turn refreshes, and the comparisons", () => {
    expect(TURN_STALE).not.toContainEqual(every.compare);
    expect(FAMILY_STALE).toEqual([...TURN_STALE, every.compare, every.suggestions]);
    expect(keys.codings("R").slice(0, 1)).toEqual(every.coding);
    expect(keys.agreement("R", "a,b")).toEqual(["coding", "agreement", "R", "a,b"]);
    expect(keys.suggestions("R")).toEqual(["suggestions", "R"]);
    expect(keys.chosenPath("R")).toEqual(["chosen-path", "R"]);
  });

  it("turn event-stream effects into the queries they make stale", () => {
    expect(staleQueries(noEffects())).toEqual([]);
    const all = { graph: true, history: true, messages: true, conversations: true, workspace: new Set(["*", "B"]) };
    expect(staleQueries(all)).toEqual([
      every.history,
      every.graph,
      every.messages,
      every.conversations,
      every.workspace,
      every.ledger,
    ]);
    const two = mergeEffects(noEffects(), { ...noEffects(), workspace: new Set(["A", "B"]) });
    expect(staleQueries(two)).toEqual([keys.workspace("A"), keys.workspace("B"), every.ledger]);
    // a note or a coding: the ledger, the cards' chips (the graph), the codings
    const noted = mergeEffects(noEffects(), { ...noEffects(), annotations: true });
    expect(staleQueries(noted)).toEqual([every.ledger, every.graph, every.coding]);
    expect(staleQueries({ ...noted, graph: true })).toEqual([every.graph, every.ledger, every.coding]);
    // a reveal: the conversations (the flag), the codings, a study's family as read alone
    const revealed = mergeEffects(noEffects(), { ...noEffects(), conversations: true, reveal: true });
    expect(staleQueries(revealed)).toEqual([every.conversations, every.coding, keys.studyFamilies]);
    expect(keys.studyFamily("R").slice(0, 2)).toEqual(keys.studyFamilies);
  });
});
