/**
 * The studio's keys, in one place: the `?` overlay lists this table, docs/DESIGN.md
 * ("Keys") describes it, and the handlers look keys up here. Pure (no React).
 *
 * Page keys work wherever the focus is not in a text field; trajectory keys work
 * while the trajectory (the graph) has the focus. Arrows move the selected step:
 * left to its parent, right to its child on the path shown (else its first child),
 * up and down to the step of the same number on the neighbouring path.
 */
import type { FlowCard, FlowGraph } from "@/features/graph/lib/graph";

export type KeyAction =
  | "help"
  | "composer"
  | "search"
  | "graph"
  | "new"
  | "code"
  | "leave"
  | "parent"
  | "child"
  | "up"
  | "down"
  | "open"
  | "restore"
  | "bring"
  | "compare";

export interface KeyBinding {
  keys: readonly string[];
  action: KeyAction;
  /** "page": anywhere but a text field; "graph": while the trajectory has the focus */
  scope: "page" | "graph";
  what: string;
  /** a binding that waits on a feature not built yet says so */
  pending?: string;
}

export const KEYMAP: readonly KeyBinding[] = [
  { keys: ["?"], action: "help", scope: "page", what: "show or hide this list of keys" },
  { keys: ["c"], action: "composer", scope: "page", what: "write a message (the composer)" },
  { keys: ["/"], action: "search", scope: "page", what: "search every conversation" },
  { keys: ["g"], action: "graph", scope: "page", what: "go to the trajectory (the graph of steps)" },
  { keys: ["n"], action: "new", scope: "page", what: "start a new conversation" },
  {
    keys: ["k"],
    action: "code",
    scope: "page",
    what: "code the text selected in a message, or the step of the focused message (the codebook's picker)",
  },
  {
    keys: ["Escape"],
    action: "leave",
    scope: "page",
    what: "close a menu, a dialog, a step's details, the coding drawer or this list; leave Maximise; on a restored step, go back to where you were",
  },
  { keys: ["ArrowLeft"], action: "parent", scope: "graph", what: "select the step before (its parent)" },
  { keys: ["ArrowRight"], action: "child", scope: "graph", what: "select the next step along the path" },
  { keys: ["ArrowUp"], action: "up", scope: "graph", what: "select the same step on the path above" },
  { keys: ["ArrowDown"], action: "down", scope: "graph", what: "select the same step on the path below" },
  {
    keys: ["Enter", " "],
    action: "open",
    scope: "graph",
    what: "open the selected step's menu (its details are there)",
  },
  { keys: ["r"], action: "restore", scope: "graph", what: "restore the selected step" },
  { keys: ["x"], action: "compare", scope: "graph", what: "compare: pick the selected step, then another" },
  { keys: ["b"], action: "bring", scope: "graph", what: "bring the selected step into the current path" },
];

/** How a key is written in the list ("ArrowLeft" → "←"). */
export function keyName(key: string): string {
  const names: Record<string, string> = {
    ArrowLeft: "←",
    ArrowRight: "→",
    ArrowUp: "↑",
    ArrowDown: "↓",
    " ": "Space",
    Escape: "Esc",
  };
  return names[key] ?? key;
}

export interface KeyPress {
  key: string;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
}

/** The action of a key press in a scope, or null (modified keys are the browser's). */
export function actionOf(press: KeyPress, scope: "page" | "graph"): KeyAction | null {
  if (press.ctrlKey || press.metaKey || press.altKey) return null;
  const found = KEYMAP.find((b) => b.scope === scope && b.keys.includes(press.key) && b.pending === undefined);
  return found?.action ?? null;
}

/** Whether keys typed at `el` are text (a field takes them, not the page). */
export function isTyping(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag === "INPUT") {
    const type = (el as HTMLInputElement).type;
    return !["checkbox", "radio", "button", "submit", "reset", "file", "range", "color"].includes(type);
  }
  return (el as HTMLElement).isContentEditable === true;
}

/** The card an arrow moves the selection to from `from` (null: it stays). */
export function neighbour(flow: FlowGraph, from: string, action: KeyAction): string | null {
  const cards = new Map(flow.cards.map((c) => [c.id, c] as const));
  const card = cards.get(from);
  if (!card) return null;
  if (action === "parent") {
    const link = flow.links.find((l) => l.target === from);
    return link && cards.has(link.source) ? link.source : null;
  }
  if (action === "child") {
    const next = flow.links
      .filter((l) => l.source === from)
      .map((l) => cards.get(l.target))
      .filter((c): c is FlowCard => c !== undefined);
    const onPath = next.find((c) => c.active);
    return (onPath ?? [...next].sort((a, b) => a.lane - b.lane)[0])?.id ?? null;
  }
  if (action === "up" || action === "down") {
    const column = flow.cards.filter((c) => c.turn === card.turn && c.id !== from);
    const sign = action === "up" ? -1 : 1;
    const beyond = column
      .filter((c) => (c.lane - card.lane) * sign > 0)
      .sort((a, b) => Math.abs(a.lane - card.lane) - Math.abs(b.lane - card.lane));
    return beyond[0]?.id ?? null;
  }
  return null;
}

/** Where the selection starts: the head's card, else the last card of the path shown. */
export function initialSelection(flow: FlowGraph | null): string | null {
  if (!flow || flow.cards.length === 0) return null;
  const head = flow.cards.find((c) => c.head);
  if (head) return head.id;
  const path = flow.cards.filter((c) => c.active).sort((a, b) => b.turn - a.turn);
  return (path[0] ?? flow.cards[flow.cards.length - 1])?.id ?? null;
}
