/**
 * Codebooks and codings as the studio shows them: the codes a picker offers (live
 * ones, filtered as the user types), a family's codings by step and by field, the
 * chips a graph card carries, and whose a coding is. Pure.
 */
import type { Schemas } from "@/lib/api/client";

export type Codebook = Schemas["CodebookOut"];
export type Code = Schemas["CodeOut"];
export type Coding = Schemas["CodingOut"];
export type CodingField = "user_message" | "reply";

/** A code with the codebook it belongs to. */
export interface BookCode extends Code {
  book: string;
  bookId: number;
}

/** The colour a code without one is shown in. */
export const DEFAULT_COLOUR = "#7c3aed";

/** Every code of the codebooks by id (retired ones too: old codings keep theirs). */
export function codeIndex(books: readonly Codebook[]): Map<number, BookCode> {
  const out = new Map<number, BookCode>();
  for (const b of books) for (const c of b.codes) out.set(c.id, { ...c, book: b.name, bookId: b.id });
  return out;
}

/** The codes a coder may apply (not retired), codebook by codebook. */
export function liveCodes(books: readonly Codebook[]): BookCode[] {
  return books.flatMap((b) => b.codes.filter((c) => !c.retired).map((c) => ({ ...c, book: b.name, bookId: b.id })));
}

/** The codes matching what was typed (case-insensitive, in the name, the codebook's
 * name or the description): names that start with it first, then the rest. */
export function filterCodes(codes: readonly BookCode[], query: string): BookCode[] {
  const q = query.trim().toLowerCase();
  if (!q) return [...codes];
  const starts: BookCode[] = [];
  const within: BookCode[] = [];
  for (const c of codes) {
    const name = c.name.toLowerCase();
    if (name.startsWith(q)) starts.push(c);
    else if (name.includes(q) || c.book.toLowerCase().includes(q) || c.description.toLowerCase().includes(q))
      within.push(c);
  }
  return [...starts, ...within];
}

/** The option an arrow key moves to in a list of `n` (wrapping; -1 when empty). */
export function moveIndex(index: number, delta: number, n: number): number {
  if (n <= 0) return -1;
  if (index < 0) return delta > 0 ? 0 : n - 1;
  return (((index + delta) % n) + n) % n;
}

/** The family's codings by node id, oldest first. */
export function byNode(codings: readonly Coding[]): Map<string, Coding[]> {
  const out = new Map<string, Coding[]>();
  for (const c of codings) {
    const list = out.get(c.node_id);
    if (list) list.push(c);
    else out.set(c.node_id, [c]);
  }
  return out;
}

/** A step's codings of one field (spans), or of the whole step (`null`). */
export function ofField(codings: readonly Coding[], field: CodingField | null): Coding[] {
  return codings.filter((c) => (field === null ? c.span == null : c.span?.field === field));
}

/** The names of the codes applied at each node (once each, in first-applied order):
 * the chips of its graph card. */
export function chipsByNode(codings: readonly Coding[], codes: ReadonlyMap<number, Code>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [node, list] of byNode(codings)) {
    const names = [...new Set(list.map((c) => codes.get(c.code_id)?.name ?? `code ${c.code_id}`))];
    out.set(node, names);
  }
  return out;
}

/** Who coded it, as the agreement counts coders: an imported coding's recorded coder
 * (`imported_author`), else its coder. */
export function coderOf(coding: Coding): string {
  return coding.imported_author ?? coding.coder;
}

/** The coders of a family's codings, by name, sorted. */
export function codersOf(codings: readonly Coding[]): string[] {
  return [...new Set(codings.map(coderOf))].sort();
}

/** A readable text colour (black or white) on a code's background colour. */
export function inkOn(colour: string): "#000" | "#fff" {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(colour);
  if (!m) return "#000";
  const [r, g, b] = [m[1], m[2], m[3]].map((h) => {
    const v = parseInt(h as string, 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 0.179 ? "#000" : "#fff";
}

/** A colour for the `i`-th new code of a codebook (the user may change it). */
export const PALETTE = ["#2563eb", "#059669", "#d97706", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];
export function nextColour(i: number): string {
  return PALETTE[i % PALETTE.length] as string;
}
