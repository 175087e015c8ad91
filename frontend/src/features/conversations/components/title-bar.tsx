"use client";
import { useState } from "react";
import { useAccess } from "@/hooks/use-access";
import type { Conversation } from "@/lib/api/client";
import type { Whereabouts } from "@/lib/where";
import { LabelLegend } from "@/components/keys-overlay";

export interface TitleBarProps {
  conversation: Conversation | undefined;
  where: Whereabouts;
  /** the label of the restored step, when one is on screen */
  restoredAt: string | null;
  /** resolves to whether the title was saved */
  onRename: (c: Conversation, title: string) => Promise<boolean>;
}

/** The header's "where am I": the conversation's title (click or Enter to edit it;
 * plain text for a viewer or commenter of a shared family, who may not rename it), the
 * path shown by name with the graph's label of its branch point, and a legend of the
 * labels. */
export function TitleBar({ conversation, where, restoredAt, onRename }: TitleBarProps) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState("");
  const [legend, setLegend] = useState(false);
  const { edit } = useAccess();
  const c = conversation;

  const save = () => {
    const title = text.trim();
    setEditing(false);
    if (!c || !title || title === c.title) return;
    void onRename(c, title).then((saved) => {
      if (!saved) {
        setText(title);
        setEditing(true);
      }
    });
  };

  return (
    <span className="conv-title title-bar" data-testid="conversation-title">
      {editing && c ? (
        <input
          className="title-input"
          data-testid="title-input"
          aria-label="Conversation title"
          autoFocus
          value={text}
          maxLength={500}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") save();
            else if (e.key === "Escape") {
              e.preventDefault();
              setEditing(false);
            }
          }}
          onBlur={save}
        />
      ) : !edit ? (
        <span className="title-button read-only" data-testid="title-text">
          <span className="title-text">{c?.title ?? "New conversation"}</span>
        </span>
      ) : (
        <button
          type="button"
          className="title-button"
          data-testid="title-edit"
          disabled={!c}
          title="Rename this conversation"
          onClick={() => {
            setText(c?.title ?? "");
            setEditing(true);
          }}
        >
          <span className="title-text">{c?.title ?? "New conversation"}</span>
          <span className="pencil" aria-hidden="true">
            ✎
          </span>
          <span className="sr-only">(rename)</span>
        </button>
      )}
      {restoredAt ? (
        <span className="badge warn" data-testid="where-label">
          restored · step {restoredAt}
        </span>
      ) : where.branchedAt !== null ? (
        <span
          className="badge where-branch"
          data-testid="where-label"
          title={
            where.name === null && where.summary !== null
              ? `The path shown (unnamed; its summary: ${where.summary}), and the step it branched at`
              : "The path shown, and the step it branched at"
          }
        >
          {/* a name, else the branch's first step: never the long automatic summary,
              which would push the conversation's title out of the header */}
          ⎇ <span className="where-name">{where.name ?? (where.first ? `path ${where.first}` : "new path")}</span> ·
          from step {where.branchedAt}
        </span>
      ) : where.tip !== null ? (
        <span className="badge" data-testid="where-label" title="The main path, at its newest step">
          main path · step {where.tip}
        </span>
      ) : null}
      <span className="legend-wrap">
        <button
          type="button"
          className="legend-button"
          data-testid="legend-button"
          aria-expanded={legend}
          title="What do the step numbers mean?"
          onClick={() => setLegend((o) => !o)}
        >
          <span aria-hidden="true">1 · 3.1</span>
          <span className="sr-only">What the step labels mean</span>
        </button>
        {legend && (
          <span className="legend-pop" role="note">
            <LabelLegend />
          </span>
        )}
      </span>
    </span>
  );
}
