import { describe, expect, it } from "vitest";
import {
  branchLabels,
  codeToken,
  formatCost,
  formatCount,
  formatMs,
  graphCodes,
  handEditSentences,
  handEditsAlongPath,
  handEditsByNode,
  parseCodes,
  pathFileName,
  provenanceRows,
  usageTotals,
  type EditOrigin,
  type Provenance,
} from "./ledger";

const edit = (over: Partial<EditOrigin>): EditOrigin => ({
  node_id: "th_a:1",
  surface: "objective",
  uid: null,
  kind: "change",
  origin: "user",
  author: "me",
  at: "2026-01-01T00:00:00Z",
  ...over,
});

const prov: Provenance = {
  provider: "openai",
  model: "gpt-x",
  profile_id: "default",
  params: {},
  instructions_sha256: "0".repeat(64),
  input_tokens: 1200,
  output_tokens: 34,
  tokens_estimated: true,
  first_token_ms: 420,
  duration_ms: 2500,
  tool_calls: 2,
  cost_usd: 0.00042,
};

describe("ledger formatting", () => {
  it("formats counts, costs and durations", () => {
    expect(formatCount(12345)).toBe("12,345");
    expect(formatCount(null)).toBe("—");
    expect(formatCost(0.00042)).toBe("$0.00042");
    expect(formatCost(1.5)).toBe("$1.50");
    expect(formatCost(0)).toBe("$0");
    expect(formatCost(null)).toBe("—");
    expect(formatMs(420)).toBe("420 ms");
    expect(formatMs(2500)).toBe("2.5 s");
  });

  it("lists provenance rows, marking estimated tokens", () => {
    const rows = Object.fromEntries(provenanceRows(prov));
    expect(rows.Model).toBe("gpt-x (openai)");
    expect(rows.Tokens).toBe("1,200 in · 34 out (estimated)");
    expect(rows.Cost).toBe("$0.00042");
    const unknown = Object.fromEntries(
      provenanceRows({ ...prov, model: null, input_tokens: null, output_tokens: null, cost_usd: null }),
    );
    expect(unknown.Tokens).toBe("—");
    expect(unknown.Model).toBe("—");
  });

  it("parses codes", () => {
    expect(parseCodes(" closure, pushback;closure\n ,agent-led ")).toEqual(["closure", "pushback", "agent-led"]);
    expect(parseCodes("")).toEqual([]);
  });

  it("names a path file", () => {
    expect(pathFileName("My Essay, v2!", "3.1", "md")).toBe("my-essay-v2-step-3.1.md");
    expect(pathFileName("", "1", "html")).toBe("conversation-step-1.html");
  });
});

describe("hand edits", () => {
  it("says what the user changed, one sentence per surface and kind", () => {
    expect(handEditSentences([edit({})])).toEqual(["You changed the objective"]);
    expect(
      handEditSentences([
        edit({ surface: "todo", kind: "add" }),
        edit({ surface: "todo", kind: "add" }),
        edit({ surface: "preference", kind: "remove" }),
      ]),
    ).toEqual(["You added 2 todos", "You removed a preference"]);
  });

  it("places a branch's pre-message edits after its branch point, on that path only", () => {
    const byNode = new Map([
      ["th_a:1", ["You added a todo"]],
      ["th_b:1", ["You changed the objective"]],
    ]);
    const main = [
      { nodeId: "th_a:1", turn: 1 },
      { nodeId: "th_a:2", turn: 2 },
    ];
    const branch = [
      { nodeId: "th_a:1", turn: 1 },
      { nodeId: "th_b:2", turn: 2 },
    ];
    expect([...handEditsAlongPath(main, byNode)]).toEqual([["th_a:1", ["You added a todo"]]]);
    expect([...handEditsAlongPath(branch, byNode)]).toEqual([["th_a:1", ["You changed the objective"]]]);
    expect([...handEditsAlongPath([{ nodeId: "th_a:1", turn: 1 }], byNode)]).toEqual([
      ["th_a:1", ["You added a todo"]],
    ]);
  });

  it("groups the user's edits by node and leaves the agent's out", () => {
    const byNode = handEditsByNode([
      edit({ node_id: "th_a:1" }),
      edit({ node_id: "th_a:2", origin: "agent" }),
      edit({ node_id: "th_a:2", surface: "document" }),
    ]);
    expect([...byNode]).toEqual([
      ["th_a:1", ["You changed the objective"]],
      ["th_a:2", ["You changed the document"]],
    ]);
  });
});

describe("usage and codes", () => {
  it("totals branch usage", () => {
    const row = { thread_id: "t", name: null, nodes: 2, input_tokens: 10, output_tokens: 5, tokens_estimated: false };
    expect(usageTotals([])).toEqual({ nodes: 0, input: 0, output: 0, cost: null, estimated: false });
    expect(
      usageTotals([
        { ...row, cost_usd: 0.5 },
        { ...row, cost_usd: null, tokens_estimated: true },
      ]),
    ).toEqual({ nodes: 4, input: 20, output: 10, cost: 0.5, estimated: true });
  });

  it("collects the graph's codes", () => {
    expect(graphCodes([{ codes: ["b", "a"] }, { codes: ["a"] }, {}])).toEqual(["a", "b"]);
  });

  it("makes a code one word of a card's data-codes", () => {
    expect(codeToken("agent led  here")).toBe("agent_led_here");
    expect(codeToken("closure")).toBe("closure");
  });
});

describe("branchLabels", () => {
  it("names the root main and a branch by the label of its first step", () => {
    const threads = [
      { thread_id: "th_root", parent_thread_id: null },
      { thread_id: "th_side", parent_thread_id: "th_root" },
      { thread_id: "th_empty_branch", parent_thread_id: "th_root" },
    ];
    const labels = new Map([
      ["th_side:3", "2.1"],
      ["th_side:4", "2.2"],
    ]);
    const nodes = [
      { id: "th_side:4", thread_id: "th_side", turn_index: 4 },
      { id: "th_side:3", thread_id: "th_side", turn_index: 3 },
    ];
    const names = branchLabels(threads, labels, nodes);
    expect(names.get("th_root")).toBe("main");
    expect(names.get("th_side")).toBe("from 2.1");
    // no step yet: the start of its id
    expect(names.get("th_empty_branch")).toBe("th_empty_");
  });
});
