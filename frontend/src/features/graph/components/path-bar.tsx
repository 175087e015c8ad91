"use client";
import { memo, useState } from "react";
import { useAccess } from "@/hooks/use-access";
import { useSuggestions } from "@/features/graph/hooks/use-big-trees";
import type { Crumb } from "@/features/graph/lib/big-trees";

export interface PathBarProps {
  /** the breadcrumbs of the displayed path */
  crumbs: readonly Crumb[];
  /** a thread of the family, to ask for its suggestions */
  thread: string;
  /** thread id → what to call it (name, summary or first step) */
  names: ReadonlyMap<string, string>;
  onJump: (nodeId: string) => void;
  /** resolves to whether it went through */
  onArchive: (threadId: string, archived: boolean) => Promise<boolean>;
}

/**
 * Above the graph: the displayed path as breadcrumbs (its first step, every branch
 * point ⎇, its last steps; a click jumps there), and the pruning suggestions, each
 * named by its first step's label and its name or reason, archived in one click (the
 * page's toast has the undo). Memoised: a streamed token does not reach it.
 */
export const PathBar = memo(function PathBar({ crumbs, thread, names, onJump, onArchive }: PathBarProps) {
  const [open, setOpen] = useState(false);
  // Tidying up archives branches: an editor's write, not offered to a viewer or commenter.
  const { edit } = useAccess();
  const suggestions = useSuggestions(thread, open && edit);
  const list = suggestions.data ?? [];
  // (the page shows the archive's undo, as a toast: useTreeNavigation)
  const archive = (id: string) => void onArchive(id, true);
  return (
    <nav className="path-bar" aria-label="The displayed path">
      <ol className="crumbs">
        {crumbs.map((c) => (
          <li key={c.nodeId}>
            {c.gap && (
              <span className="muted gap" aria-hidden>
                …
              </span>
            )}
            <button
              type="button"
              className={`crumb ${c.fork > 0 ? "fork" : ""}`}
              data-testid="breadcrumb-item"
              data-node-id={c.nodeId}
              title={c.fork > 0 ? `Step ${c.label}: ${c.fork + 1} paths fork here` : `Step ${c.label}`}
              onClick={() => onJump(c.nodeId)}
            >
              {c.label}
              {c.fork > 0 && <span className="fork-mark"> ⎇{c.fork + 1}</span>}
            </button>
          </li>
        ))}
      </ol>
      {/* (nothing to tidy in a conversation without a step; a viewer may not archive) */}
      {edit && crumbs.length > 0 && (
        <div className="tidy">
          <button
            type="button"
            className="small-btn"
            data-testid="suggestions-button"
            aria-expanded={open}
            onClick={() => setOpen((o) => !o)}
          >
            Tidy up{open && suggestions.data ? ` (${list.length})` : ""}
          </button>
          {open && (
            <div className="suggestions" role="region" aria-label="Branches worth archiving">
              {suggestions.isLoading && <div className="muted pad">Looking for idle and duplicate branches…</div>}
              {!suggestions.isLoading && list.length === 0 && (
                <div className="muted pad">Nothing to tidy: every branch is busy and different.</div>
              )}
              <ul>
                {list.map((s) => (
                  <li
                    key={`${s.thread_id}-${s.reason}`}
                    data-testid="suggestion-item"
                    data-thread-id={s.thread_id}
                    data-reason={s.reason}
                  >
                    <span className="suggestion-text">
                      <strong>{names.get(s.thread_id) ?? s.thread_id}</strong>
                      <span className="muted"> · {s.detail}</span>
                    </span>
                    <button
                      type="button"
                      className="small-btn"
                      data-testid="archive-button"
                      data-thread-id={s.thread_id}
                      onClick={() => archive(s.thread_id)}
                    >
                      Archive
                    </button>
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </nav>
  );
});
