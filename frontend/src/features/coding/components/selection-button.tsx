"use client";
import type { CodingTarget } from "@/features/coding/hooks/use-coding";

/** A "Code" button beside text selected in a message (the mouse's way; the key `k`
 * does the same). */
export function SelectionButton({
  selection,
  onOpen,
}: {
  selection: CodingTarget | null;
  onOpen: (target: CodingTarget) => void;
}) {
  if (selection === null) return null;
  return (
    <button
      type="button"
      className="coding-selection primary"
      data-testid="coding-button"
      data-scope="selection"
      data-node-id={selection.nodeId}
      aria-keyshortcuts="k"
      title="Code the selected text (key: k)"
      style={{ left: Math.max(8, selection.at.x), top: selection.at.y + 4 }}
      onMouseDown={(e) => e.preventDefault()}
      onClick={() => onOpen(selection)}
    >
      Code selection
    </button>
  );
}
