"use client";
import { useState, type CSSProperties, type ReactNode } from "react";
import { giveBack } from "@/lib/drafts";

export interface ItemRowProps {
  /** "preference" or "todo": the row is `<kind>-item`, its buttons `<kind>-move-up` … */
  kind: "preference" | "todo";
  uid: string;
  text: string;
  /** the item's place in its list, and the list's length */
  index: number;
  count: number;
  /** the item's own control before its text (a preference's lock, a todo's done box) */
  lead: ReactNode;
  /** buttons before the moves (a todo's outdent and indent) */
  extra?: ReactNode;
  /** data attributes saying the item's state (data-locked, data-done) */
  state: Record<`data-${string}`, string>;
  className?: string;
  style?: CSSProperties;
  /** moves the item to `position` (0-based) */
  onMove: (position: number) => void;
  onRemove: () => void;
}

/** One preference or todo of the workspace: its control, its text, and (on hover or
 * focus) move up, move down and remove. */
export function ItemRow(props: ItemRowProps) {
  const { kind, index, count } = props;
  return (
    <li
      data-testid={`${kind}-item`}
      data-uid={props.uid}
      {...props.state}
      className={props.className}
      style={props.style}
    >
      {props.lead}
      <span className="item-text">{props.text}</span>
      <span className="item-actions">
        {props.extra}
        <button
          type="button"
          className="icon"
          title="Move up"
          data-testid={`${kind}-move-up`}
          disabled={index === 0}
          onClick={() => props.onMove(index - 1)}
        >
          ↑
        </button>
        <button
          type="button"
          className="icon"
          title="Move down"
          data-testid={`${kind}-move-down`}
          disabled={index === count - 1}
          onClick={() => props.onMove(index + 1)}
        >
          ↓
        </button>
        <button type="button" className="icon" title="Remove" data-testid={`${kind}-remove`} onClick={props.onRemove}>
          ✕
        </button>
      </span>
    </li>
  );
}

/** The field that adds an item on Enter; text the server did not take comes back into
 * it, before anything typed since. `onAdd` resolves to whether the item was added. */
export function AddItem({
  testId,
  placeholder,
  onAdd,
}: {
  testId: string;
  placeholder: string;
  onAdd: (text: string) => Promise<boolean>;
}) {
  const [draft, setDraft] = useState("");
  return (
    <form
      className="add"
      onSubmit={(e) => {
        e.preventDefault();
        const text = draft.trim();
        if (!text) return;
        setDraft("");
        void onAdd(text).then((added) => added || setDraft((now) => giveBack(text, now, " ")));
      }}
    >
      <input data-testid={testId} placeholder={placeholder} value={draft} onChange={(e) => setDraft(e.target.value)} />
    </form>
  );
}
