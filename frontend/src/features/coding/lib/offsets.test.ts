import { describe, expect, it } from "vitest";
import { codePointLength, excerpt, segments, selectionSpan, spanText, toCodePoint, toUtf16 } from "./offsets";

// "👍" (U+1F44D) and "𝔸" (U+1D538) are two UTF-16 units each and one code point;
// "é" written as e + U+0301 is two code points (the server counts them so too).
const THUMB = "👍";
const TEXT = `ok ${THUMB} go 𝔸b`;

describe("code points and UTF-16", () => {
  it("counts an astral character once", () => {
    expect(TEXT.length).toBe(12);
    expect(codePointLength(TEXT)).toBe(10);
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("e\u0301")).toBe(2);
  });

  it("converts a UTF-16 index after an emoji to code points and back", () => {
    const go = TEXT.indexOf("go");
    expect(go).toBe(6);
    expect(toCodePoint(TEXT, go)).toBe(5);
    expect(toUtf16(TEXT, 5)).toBe(go);
    expect(toCodePoint(TEXT, TEXT.length)).toBe(10);
    expect(toUtf16(TEXT, 10)).toBe(TEXT.length);
    expect(toUtf16(TEXT, 99)).toBe(TEXT.length);
    expect(toCodePoint(TEXT, 99)).toBe(10);
    expect(toCodePoint(TEXT, -3)).toBe(0);
  });

  it("rounds an index inside a surrogate pair down for a start and up for an end", () => {
    const inside = TEXT.indexOf(THUMB) + 1;
    expect(toCodePoint(TEXT, inside, "down")).toBe(3);
    expect(toCodePoint(TEXT, inside, "up")).toBe(4);
  });

  it("a lone surrogate counts as one code point", () => {
    const broken = "a\ud83db";
    expect(codePointLength(broken)).toBe(3);
    expect(toCodePoint(broken, 2)).toBe(2);
  });
});

describe("selectionSpan", () => {
  it("gives code points of the selection, the emoji counted once", () => {
    const from = TEXT.indexOf("go");
    const span = selectionSpan(TEXT, from, from + 2);
    expect(span).toEqual({ start: 5, end: 7 });
    expect(spanText(TEXT, span!)).toBe("go");
  });

  it("takes a selection made backwards, trims white space, covers a whole emoji", () => {
    const at = TEXT.indexOf(THUMB);
    expect(selectionSpan(TEXT, at + 3, at - 1)).toEqual({ start: 3, end: 4 });
    expect(spanText(TEXT, { start: 3, end: 4 })).toBe(THUMB);
    // half a pair selected still codes the whole character
    expect(selectionSpan(TEXT, at, at + 1)).toEqual({ start: 3, end: 4 });
  });

  it("is null for white space only or nothing", () => {
    expect(selectionSpan(TEXT, 2, 3)).toBeNull();
    expect(selectionSpan(TEXT, 4, 4)).toBeNull();
  });

  it("the last character, an astral one", () => {
    const s = `x ${"𝔸"}`;
    expect(selectionSpan(s, 2, s.length)).toEqual({ start: 2, end: 3 });
  });
});

describe("excerpt", () => {
  it("keeps a short span whole and cuts a long one in the middle, by characters", () => {
    expect(excerpt(TEXT, { start: 3, end: 7 })).toBe(`${THUMB} go`);
    const long = `${"👍".repeat(50)}${"x".repeat(50)}`;
    const short = excerpt(long, { start: 0, end: 100 }, 11);
    expect(Array.from(short)).toHaveLength(11);
    expect(short).toBe(`${"👍".repeat(5)}…${"x".repeat(5)}`);
  });
});

describe("segments", () => {
  it("cuts the text at the spans' ends, in code points", () => {
    const out = segments(TEXT, [{ start: 3, end: 7, item: "a" }]);
    expect(out).toEqual([
      { text: "ok ", items: [] },
      { text: `${THUMB} go`, items: ["a"] },
      { text: " 𝔸b", items: [] },
    ]);
    expect(out.map((s) => s.text).join("")).toBe(TEXT);
  });

  it("overlapping spans give pieces with both; spans outside the text are clipped", () => {
    const out = segments("abcdef", [
      { start: 1, end: 4, item: 1 },
      { start: 3, end: 99, item: 2 },
      { start: 7, end: 9, item: 3 },
    ]);
    expect(out).toEqual([
      { text: "a", items: [] },
      { text: "bc", items: [1] },
      { text: "d", items: [1, 2] },
      { text: "ef", items: [2] },
    ]);
  });

  it("no span: the whole text in one piece", () => {
    expect(segments("abc", [])).toEqual([{ text: "abc", items: [] }]);
    expect(segments("", [])).toEqual([]);
  });
});
