"use client";
import type { CodingView } from "@/features/coding/hooks/use-coding";

/** The header's "Coding" button: opens the coding drawer, and says when coding is
 * blind for the caller. */
export function CodingButtonBar({ view, open, onToggle }: { view: CodingView; open: boolean; onToggle: () => void }) {
  return (
    <button
      type="button"
      className="coding-toggle"
      data-testid="coding-panel-button"
      aria-expanded={open}
      title="Codebooks, blind coding and the coders' agreement"
      onClick={onToggle}
    >
      Coding
      {view.blindForMe && view.canCode && <span className="badge warn small">blind</span>}
    </button>
  );
}
