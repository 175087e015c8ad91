/**
 * Offsets of coded spans. The server counts a span in Unicode code points of the
 * field (a Python string's indices); the browser's strings and selections count UTF-16
 * code units, where a character beyond the Basic Multilingual Plane (most emoji, many
 * CJK extension ideographs) takes two. These convert between the two, and cut a text
 * into the pieces a set of spans makes. Pure.
 */

export interface CodePointSpan {
  /** first code point (inclusive) */
  start: number;
  /** code point after the last (exclusive) */
  end: number;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** The length of `text` in code points. */
export function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    if (isHigh(text.charCodeAt(i)) && isLow(text.charCodeAt(i + 1))) i++;
    n++;
  }
  return n;
}

/** The code point index of UTF-16 index `index` of `text`. An index inside a
 * surrogate pair is moved to the pair's start (`down`) or past its end (`up`). */
export function toCodePoint(text: string, index: number, round: "down" | "up" = "down"): number {
  const at = Math.max(0, Math.min(index, text.length));
  let n = 0;
  let i = 0;
  while (i < at) {
    const pair = isHigh(text.charCodeAt(i)) && isLow(text.charCodeAt(i + 1));
    if (pair && i + 1 === at) return round === "up" ? n + 1 : n;
    i += pair ? 2 : 1;
    n++;
  }
  return n;
}

/** The UTF-16 index of code point `point` of `text` (clamped to its length). */
export function toUtf16(text: string, point: number): number {
  let n = 0;
  let i = 0;
  while (i < text.length && n < point) {
    i += isHigh(text.charCodeAt(i)) && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
    n++;
  }
  return i;
}

/** The code-point span of a selection from UTF-16 `from` to `to` (either order) in
 * `text`, with the white space at its ends left out; null when nothing but white space
 * is selected. */
export function selectionSpan(text: string, from: number, to: number): CodePointSpan | null {
  let a = Math.max(0, Math.min(from, to, text.length));
  let b = Math.min(text.length, Math.max(from, to));
  while (a < b && /\s/.test(text[a] ?? "")) a++;
  while (b > a && /\s/.test(text[b - 1] ?? "")) b--;
  if (a >= b) return null;
  return { start: toCodePoint(text, a, "down"), end: toCodePoint(text, b, "up") };
}

/** The text a code-point span covers. */
export function spanText(text: string, span: CodePointSpan): string {
  return text.slice(toUtf16(text, span.start), toUtf16(text, span.end));
}

/** A span's text shortened for a list ("…" in the middle of a long one). */
export function excerpt(text: string, span: CodePointSpan, max = 80): string {
  const whole = Array.from(spanText(text, span).replace(/\s+/g, " "));
  if (whole.length <= max) return whole.join("");
  const half = Math.floor((max - 1) / 2);
  return `${whole.slice(0, half).join("")}…${whole.slice(whole.length - half).join("")}`;
}

export interface Marked<T> extends CodePointSpan {
  /** what the span stands for (a coding) */
  item: T;
}

export interface Segment<T> {
  text: string;
  /** the items whose spans cover this piece, in the order given */
  items: T[];
}

/** `text` cut at every span's ends: each piece with the items that cover it (spans
 * outside the text are clipped; overlapping spans give pieces with several items). */
export function segments<T>(text: string, spans: readonly Marked<T>[]): Segment<T>[] {
  const length = codePointLength(text);
  const cuts = new Set<number>([0, length]);
  const clipped = spans
    .map((s) => ({ ...s, start: Math.max(0, s.start), end: Math.min(length, s.end) }))
    .filter((s) => s.start < s.end);
  for (const s of clipped) cuts.add(s.start).add(s.end);
  const points = [...cuts].sort((x, y) => x - y);
  const out: Segment<T>[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const start = points[i] as number;
    const end = points[i + 1] as number;
    const items = clipped.filter((s) => s.start <= start && s.end >= end).map((s) => s.item);
    const piece = spanText(text, { start, end });
    const last = out[out.length - 1];
    if (last && last.items.length === 0 && items.length === 0) last.text += piece;
    else out.push({ text: piece, items });
  }
  return out;
}
