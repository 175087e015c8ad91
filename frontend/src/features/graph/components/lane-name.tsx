"use client";
import { useRef, useState, type SyntheticEvent } from "react";
import { useAccess } from "@/hooks/use-access";
import type { Fold } from "@/features/graph/lib/big-trees";
import type { FlowCard } from "@/features/graph/lib/graph";
import type { CardActions } from "@/features/graph/types";
import { MAX_NAME, normalizeName } from "@/lib/research";

/** A branch's summary on its first card, with its fold button (▸ shows what it hides). */
export function LaneSummary({
  card,
  fold,
  onFold,
}: {
  card: FlowCard;
  fold: Fold | null;
  onFold: (t: string) => void;
}) {
  return (
    <div className="lane-summary">
      {fold && (
        <button
          type="button"
          className="nodrag card-btn fold-btn"
          data-testid="fold-button"
          data-thread-id={card.threadId}
          aria-expanded={!fold.folded}
          aria-label={fold.folded ? `Expand this branch (${fold.hidden} steps hidden)` : "Collapse this branch"}
          title={
            fold.folded ? `Expand: ${fold.hidden} step${fold.hidden === 1 ? "" : "s"} hidden` : "Collapse this branch"
          }
          onClick={(e) => {
            e.stopPropagation();
            onFold(card.threadId);
          }}
          onDoubleClick={(e) => e.stopPropagation()}
        >
          {fold.folded ? `▸ ${fold.hidden}` : "▾"}
        </button>
      )}
      {card.archived && <span className="badge">archived</span>}
      {card.threadSummary && (
        <span className="clamp" data-testid="branch-summary" data-thread-id={card.threadId} title={card.threadSummary}>
          {card.threadSummary}
        </span>
      )}
    </div>
  );
}

/** A thread's short name on its first card: click to edit in place; Enter saves,
 * Escape cancels, an empty name clears it. */
export function BranchName({
  threadId,
  name,
  onRename,
}: {
  threadId: string;
  name: string | null;
  onRename: CardActions["onRename"];
}) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(name ?? "");
  const [saving, setSaving] = useState(false);
  const done = useRef(false);
  const { edit } = useAccess();

  const start = () => {
    done.current = false;
    setText(name ?? "");
    setEditing(true);
  };
  const finish = (save: boolean) => {
    if (done.current) return;
    done.current = true;
    const next = normalizeName(text);
    if (!save || next === name) {
      setEditing(false);
      return;
    }
    setSaving(true);
    onRename(threadId, next)
      .then(() => setEditing(false))
      .catch(() => {
        // the studio shows the server's message; keep the text for another try
        done.current = false;
      })
      .finally(() => setSaving(false));
  };
  const stop = (e: SyntheticEvent) => e.stopPropagation();

  if (!edit) {
    // a viewer or commenter reads the name; naming a path is an editor's
    return name ? (
      <span className="branch-name read-only" data-testid="branch-name" data-thread-id={threadId}>
        ⎇ {name}
      </span>
    ) : null;
  }
  if (editing) {
    return (
      <div className="branch-name-edit nodrag nopan" onClick={stop} onDoubleClick={stop}>
        <input
          data-testid="branch-name-input"
          data-thread-id={threadId}
          autoFocus
          value={text}
          maxLength={MAX_NAME}
          disabled={saving}
          placeholder="name this path (empty clears)"
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            e.stopPropagation();
            if (e.key === "Enter") finish(true);
            else if (e.key === "Escape") finish(false);
          }}
          onBlur={() => finish(true)}
        />
      </div>
    );
  }
  return (
    <button
      type="button"
      className={`nodrag branch-name ${name ? "" : "unnamed"}`}
      data-testid="branch-name"
      data-thread-id={threadId}
      title={name ? `Path “${name}”: click to rename` : "Name this path"}
      onClick={(e) => {
        e.stopPropagation();
        start();
      }}
      onDoubleClick={stop}
    >
      {name ? `⎇ ${name}` : "+ name"}
    </button>
  );
}
