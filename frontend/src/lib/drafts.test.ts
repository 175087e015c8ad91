import { describe, expect, it } from "vitest";
import { DRAFT_PREFIX, draftStore, giveBack } from "./drafts";

describe("giveBack", () => {
  it("restores the lost text into an empty field", () => {
    expect(giveBack("todo: x", "")).toBe("todo: x");
    expect(giveBack("todo: x", "  ")).toBe("todo: x");
  });
  it("keeps what was typed since, after the lost text", () => {
    expect(giveBack("todo: x", "more")).toBe("todo: x\nmore");
    expect(giveBack("a", "b", " ")).toBe("a b");
  });
});

describe("draftStore", () => {
  it("keeps one draft per conversation in storage and forgets an empty one", () => {
    const data = new Map<string, string>();
    const storage = {
      getItem: (k: string) => data.get(k) ?? null,
      setItem: (k: string, v: string) => void data.set(k, v),
      removeItem: (k: string) => void data.delete(k),
    };
    const drafts = draftStore(storage);
    expect(drafts.get("th_a")).toBe("");
    drafts.set("th_a", "half a thought");
    drafts.set("th_b", "another");
    expect(data.get(`${DRAFT_PREFIX}th_a`)).toBe("half a thought");
    expect(draftStore(storage).get("th_a")).toBe("half a thought");
    expect(drafts.get("th_b")).toBe("another");
    drafts.set("th_a", "");
    expect(data.has(`${DRAFT_PREFIX}th_a`)).toBe(false);
  });
  it("keeps drafts in memory without storage", () => {
    const drafts = draftStore(null);
    drafts.set("th_a", "x");
    expect(drafts.get("th_a")).toBe("x");
    drafts.set("th_a", "");
    expect(drafts.get("th_a")).toBe("");
  });
});
