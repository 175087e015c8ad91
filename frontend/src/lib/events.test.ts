import { describe, expect, it } from "vitest";
import {
  backoff,
  hasEffects,
  initialStreamState,
  mergeEffects,
  noEffects,
  reduceAction,
  type ActionEnvelope,
  type StreamState,
} from "./events";

const env = (serverSeq: number, action: ActionEnvelope["action"]): ActionEnvelope => ({
  channel: "ahp-chat:/x",
  action,
  serverSeq,
});

describe("event reducer", () => {
  it("follows another client's turn: start, streamed text, end", () => {
    let s: StreamState = initialStreamState;
    let r = reduceAction(s, env(1, { type: "chat/turnStarted", turnId: "T:1", message: { text: "hi" } }));
    s = r.state;
    expect(s.live).toEqual({ turnId: "T:1", question: "hi", text: "" });
    expect(r.effects.graph && r.effects.history && r.effects.messages).toBe(true);
    s = reduceAction(s, env(2, { type: "chat/responsePart", turnId: "T:1" })).state;
    s = reduceAction(s, env(3, { type: "chat/delta", turnId: "T:1", content: "Hel" })).state;
    r = reduceAction(s, env(4, { type: "chat/delta", turnId: "T:1", content: "lo" }));
    expect(hasEffects(r.effects)).toBe(false);
    s = r.state;
    expect(s.live?.text).toBe("Hello");
    s = reduceAction(s, env(5, { type: "chat/delta", turnId: "other", content: "x" })).state;
    expect(s.live?.text).toBe("Hello");
    r = reduceAction(s, env(6, { type: "chat/turnComplete", turnId: "T:1" }));
    expect(r.state.live).toBeNull();
    expect(r.state.lastSeq).toBe(6);
    expect(r.effects).toMatchObject({ graph: true, history: true, messages: true, conversations: true });
    expect([...r.effects.workspace]).toEqual(["*"]);
  });

  it("clears the live turn on cancel and error, and refetches", () => {
    for (const type of ["chat/turnCancelled", "chat/error"]) {
      const s: StreamState = { lastSeq: 1, live: { turnId: "T:2", question: "q", text: "" } };
      const r = reduceAction(s, env(2, { type, turnId: "T:2" }));
      expect(r.state.live).toBeNull();
      expect(r.effects.graph).toBe(true);
    }
    const other: StreamState = { lastSeq: 1, live: { turnId: "T:2", question: "q", text: "" } };
    expect(reduceAction(other, env(2, { type: "chat/error", turnId: "T:9" })).state.live).not.toBeNull();
  });

  it("refetches everything on checkouts and pruning, and on unknown actions", () => {
    for (const type of ["chat/historyCheckedOut", "chat/turnsPruned", "chat/turnsLoaded", "session/somethingNew"]) {
      const r = reduceAction(initialStreamState, env(3, { type }));
      expect(r.effects.history && r.effects.graph && r.effects.messages).toBe(true);
      expect(r.effects.workspace.has("*")).toBe(true);
    }
  });

  it("refetches the catalogue when a thread changes, and one workspace when it changes", () => {
    const t = reduceAction(initialStreamState, env(1, { type: "haico/threadChanged", threadId: "th_a" }));
    expect(t.effects).toMatchObject({ conversations: true, graph: true, messages: false });
    const w = reduceAction(
      initialStreamState,
      env(2, { type: "haico/workspaceChanged", threadId: "th_b", surfaces: ["todos"] }),
    );
    expect([...w.effects.workspace]).toEqual(["th_b"]);
    expect(w.effects.graph).toBe(false);
    const any = reduceAction(initialStreamState, env(3, { type: "haico/workspaceChanged" }));
    expect([...any.effects.workspace]).toEqual(["*"]);
  });

  it("refreshes the notes and codings (not the transcript) when an annotation changes", () => {
    for (const type of ["annotations/set", "annotations/removed"]) {
      const r = reduceAction(initialStreamState, env(4, { type, annotation: {} }));
      expect(r.effects).toMatchObject({ annotations: true, history: false, messages: false, graph: false });
      expect(hasEffects(r.effects)).toBe(true);
    }
  });

  it("refetches the codings and the reveal flag (nothing else) when codings are revealed", () => {
    const action = { type: "haico/threadChanged", threadId: "th_a", change: "revealed", reveal: true };
    const r = reduceAction(initialStreamState, env(5, action));
    expect(r.effects).toMatchObject({ reveal: true, conversations: true, graph: false, history: false });
    expect(hasEffects(r.effects)).toBe(true);
  });

  it("ignores replayed actions at or below the last sequence number", () => {
    const s: StreamState = { lastSeq: 10, live: null };
    const r = reduceAction(s, env(10, { type: "chat/historyCheckedOut" }));
    expect(r.state).toBe(s);
    expect(hasEffects(r.effects)).toBe(false);
  });

  it("refetches everything on a resync and drops the streamed text", () => {
    const r = reduceAction(
      { lastSeq: 3, live: { turnId: "a", question: "", text: "x" } },
      env(40, { type: "haico/resync" }),
    );
    expect(r.state).toEqual({ lastSeq: 40, live: null });
    expect(r.effects.history && r.effects.graph && r.effects.messages).toBe(true);
    expect(reduceAction({ lastSeq: 50, live: null }, env(40, { type: "haico/resync" })).state.lastSeq).toBe(50);
  });

  it("merges effects and backs off reconnects", () => {
    const a = noEffects();
    a.graph = true;
    a.workspace.add("x");
    const b = noEffects();
    b.messages = true;
    b.workspace.add("y");
    const m = mergeEffects(a, b);
    expect(m).toMatchObject({ graph: true, messages: true, history: false });
    expect([...m.workspace].sort()).toEqual(["x", "y"]);
    expect(backoff(0)).toBe(500);
    expect(backoff(3)).toBe(4000);
    expect(backoff(20)).toBe(10_000);
  });
});
