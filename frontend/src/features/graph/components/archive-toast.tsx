"use client";
import { useEffect } from "react";

const SHOWN_MS = 12_000;

/** After a branch is archived: what was archived and its undo, at the foot of the
 * window, for a few seconds (or until its ✕). */
export function ArchiveToast({
  archived,
  onUndo,
  onDismiss,
}: {
  archived: { threadId: string; name: string } | null;
  onUndo: () => void;
  onDismiss: () => void;
}) {
  useEffect(() => {
    if (archived === null) return;
    const id = window.setTimeout(onDismiss, SHOWN_MS);
    return () => window.clearTimeout(id);
  }, [archived, onDismiss]);
  if (archived === null) return null;
  return (
    <div className="archive-toast" data-testid="archive-toast" role="status">
      <span className="archived-note" data-testid="archived-note" data-thread-id={archived.threadId}>
        Archived <strong>{archived.name}</strong>: hidden from the lists, nothing deleted.
      </span>
      <button type="button" className="small-btn primary" data-testid="archive-undo" onClick={onUndo}>
        Undo
      </button>
      <button type="button" className="icon" aria-label="Dismiss" onClick={onDismiss}>
        ✕
      </button>
    </div>
  );
}
