import { describe, expect, it } from "vitest";
import { giveBack } from "./drafts";

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
