"use client";
import { useEffect, useState } from "react";
import { selectionSpan, spanText } from "@/features/coding/lib/offsets";
import type { CodingField } from "@/features/coding/lib/codings";
import type { CodingTarget } from "./use-coding";

/** The element a message's codable text is in: `data-coding-field` (`user_message` or
 * `reply`) and `data-node-id` on it; its text is the field's whole text. */
export const FIELD_SELECTOR = "[data-coding-field]";

function fieldOf(node: Node | null): HTMLElement | null {
  const el = node instanceof Element ? node : (node?.parentElement ?? null);
  return el?.closest<HTMLElement>(FIELD_SELECTOR) ?? null;
}

/** The UTF-16 offset of a boundary point inside `root`'s text. */
function offsetIn(root: HTMLElement, node: Node, offset: number): number {
  const range = document.createRange();
  range.setStart(root, 0);
  range.setEnd(node, offset);
  return range.toString().length;
}

/** The coding target the page's current selection makes, if it lies in one field of
 * one message (a selection across messages codes nothing). */
export function selectionTarget(): CodingTarget | null {
  const sel = typeof window === "undefined" ? null : window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const range = sel.getRangeAt(0);
  const field = fieldOf(range.startContainer);
  if (!field || field !== fieldOf(range.endContainer)) return null;
  const nodeId = field.dataset.nodeId;
  const which = field.dataset.codingField as CodingField | undefined;
  if (!nodeId || (which !== "user_message" && which !== "reply")) return null;
  const text = field.textContent ?? "";
  const span = selectionSpan(
    text,
    offsetIn(field, range.startContainer, range.startOffset),
    offsetIn(field, range.endContainer, range.endOffset),
  );
  if (span === null) return null;
  const box = range.getBoundingClientRect();
  return {
    nodeId,
    span: { field: which, ...span },
    quote: spanText(text, span),
    at: { x: box.left, y: box.bottom },
    returnTo: field.closest<HTMLElement>('[data-testid="chat-message"]'),
  };
}

/** The selection a coder could code now, followed as it changes (null: none). */
export function useTextSelection(enabled: boolean): CodingTarget | null {
  const [target, setTarget] = useState<CodingTarget | null>(null);
  useEffect(() => {
    if (!enabled) return;
    let frame = 0;
    const onChange = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => setTarget(selectionTarget()));
    };
    document.addEventListener("selectionchange", onChange);
    return () => {
      cancelAnimationFrame(frame);
      document.removeEventListener("selectionchange", onChange);
    };
  }, [enabled]);
  return enabled ? target : null;
}
