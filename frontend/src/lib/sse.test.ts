import { describe, expect, it } from "vitest";
import { createSseParser, parseData, readSse } from "./sse";

describe("SSE parser", () => {
  it("parses named events with ids and multi-line data", () => {
    const p = createSseParser();
    const out = p.push('id: 7\nevent: action\ndata: {"a":1}\ndata: more\n\n');
    expect(out).toEqual([{ event: "action", data: '{"a":1}\nmore', id: "7" }]);
  });

  it("handles events split across chunks and every line ending", () => {
    const p = createSseParser();
    expect(p.push("event: tok")).toEqual([]);
    expect(p.push("en\r\ndata: x\r")).toEqual([]);
    expect(p.push("\n\r\n")).toEqual([{ event: "token", data: "x", id: null }]);
    expect(p.push("data: y\r\rdata: z\n\n")).toEqual([
      { event: "message", data: "y", id: null },
      { event: "message", data: "z", id: null },
    ]);
  });

  it("ignores comments, unknown fields and events without data", () => {
    const p = createSseParser();
    expect(p.push(": keepalive\n\nretry: 5\nfoo\nevent: empty\n\n")).toEqual([]);
    expect(p.push("data\n\n")).toEqual([{ event: "message", data: "", id: null }]);
    expect(p.push("data:no-space\n\n")[0]?.data).toBe("no-space");
  });

  it("drops an unterminated event at the end", () => {
    const p = createSseParser();
    p.push("data: half");
    expect(p.end()).toEqual([]);
    expect(p.end()).toEqual([]);
  });

  it("reads a response body as it arrives", async () => {
    const enc = new TextEncoder();
    const chunks = ["event: a\nda", "ta: 1\n\nevent: b\ndata: ", "2\n\n", "data: 3\n"];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(enc.encode(c));
        controller.close();
      },
    });
    const seen = [];
    for await (const e of readSse(body)) seen.push([e.event, e.data]);
    expect(seen).toEqual([
      ["a", "1"],
      ["b", "2"],
    ]);
  });

  it("decodes JSON data, or gives null", () => {
    expect(parseData<{ x: number }>({ event: "m", data: '{"x":2}', id: null })).toEqual({ x: 2 });
    expect(parseData({ event: "m", data: "not json", id: null })).toBeNull();
  });
});
