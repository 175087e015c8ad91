import { describe, expect, it } from "vitest";
import { countRender, type RenderCounts } from "./render-probe";

describe("countRender", () => {
  it("counts each render under its name once a test asked for counts", () => {
    const scope: { __haicoRenders?: RenderCounts } = { __haicoRenders: {} };
    countRender("graph-node:a", scope);
    countRender("graph-node:a", scope);
    countRender("chat", scope);
    expect(scope.__haicoRenders).toEqual({ "graph-node:a": 2, chat: 1 });
  });

  it("does nothing when no test asked (no window, or no counts on it)", () => {
    const scope: { __haicoRenders?: RenderCounts } = {};
    countRender("chat", scope);
    expect(scope).toEqual({});
    expect(() => countRender("chat")).not.toThrow();
  });
});
