"use client";
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from "react";
import type { CodingTarget } from "@/features/coding/hooks/use-coding";
import { DEFAULT_COLOUR, filterCodes, moveIndex, type BookCode } from "@/features/coding/lib/codings";

export interface CodingPickerProps {
  target: CodingTarget | null;
  codes: readonly BookCode[];
  /** the caller owns a codebook-less family: point them at the coding panel */
  onManage: () => void;
  onPick: (codeId: number, memo: string) => void;
  onClose: () => void;
  busy: boolean;
}

const WIDTH = 320;

/** The codebook as a picker: type to filter, ↑/↓ to move, Enter to code, Escape to
 * close; an optional memo (Ctrl+Enter in it codes with the code highlighted). */
export function CodingPicker({ target, codes, onManage, onPick, onClose, busy }: CodingPickerProps) {
  if (target === null) return null;
  return (
    <PickerBody
      key={`${target.nodeId}:${target.span?.field ?? ""}:${target.span?.start ?? ""}`}
      {...{ target, codes, onManage, onPick, onClose, busy }}
    />
  );
}

function PickerBody({ target, codes, onManage, onPick, onClose, busy }: CodingPickerProps & { target: CodingTarget }) {
  const [query, setQuery] = useState("");
  const [index, setIndex] = useState(0);
  const [memo, setMemo] = useState("");
  const input = useRef<HTMLInputElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const id = useId();
  const shown = useMemo(() => filterCodes(codes, query), [codes, query]);
  const active = shown[Math.min(index, shown.length - 1)];
  useEffect(() => input.current?.focus(), []);
  // Outside the picker, a press closes it.
  useEffect(() => {
    const onDown = (e: PointerEvent) => {
      if (box.current && e.target instanceof Node && !box.current.contains(e.target)) onClose();
    };
    document.addEventListener("pointerdown", onDown);
    return () => document.removeEventListener("pointerdown", onDown);
  }, [onClose]);

  const pick = (c: BookCode | undefined) => {
    if (c && !busy) onPick(c.id, memo.trim());
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      onClose();
    } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      setIndex((i) => moveIndex(Math.min(i, shown.length - 1), e.key === "ArrowDown" ? 1 : -1, shown.length));
    } else if (e.key === "Enter" && (e.target === input.current || e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      pick(active);
    }
  };
  const left = Math.max(
    8,
    Math.min(target.at.x, (typeof window === "undefined" ? 1024 : window.innerWidth) - WIDTH - 8),
  );
  const top = Math.max(8, Math.min(target.at.y + 6, (typeof window === "undefined" ? 768 : window.innerHeight) - 340));
  const what = target.span ? `“${target.quote ?? ""}”` : "the whole step";
  return (
    <div
      ref={box}
      className="coding-picker"
      data-testid="coding-picker"
      role="dialog"
      aria-label={`Code ${what}`}
      style={{ left, top }}
      onKeyDown={onKey}
      data-keeps-escape
    >
      <div className="cp-what small">
        Code <span className="cp-quote">{what}</span>
      </div>
      <input
        ref={input}
        data-testid="coding-filter"
        role="combobox"
        aria-expanded="true"
        aria-controls={`${id}-list`}
        aria-activedescendant={active ? `${id}-${active.id}` : undefined}
        aria-label="Find a code"
        placeholder="Type to find a code…"
        value={query}
        onChange={(e) => {
          setQuery(e.target.value);
          setIndex(0);
        }}
      />
      <ul id={`${id}-list`} role="listbox" className="cp-list" aria-label="Codes">
        {shown.map((c) => (
          <li
            key={c.id}
            id={`${id}-${c.id}`}
            role="option"
            aria-selected={c === active}
            data-testid="coding-option"
            data-code-id={c.id}
            className={c === active ? "active" : ""}
            onPointerDown={(e) => e.preventDefault()}
            onClick={() => pick(c)}
          >
            <span className="code-dot" style={{ background: c.color ?? DEFAULT_COLOUR }} aria-hidden />
            <span className="cp-name">{c.name}</span>
            <span className="muted small cp-book">{c.book}</span>
          </li>
        ))}
        {shown.length === 0 && (
          <li className="muted small cp-empty" role="presentation">
            {codes.length === 0 ? (
              <>
                No codebook yet.{" "}
                <button type="button" className="link" onClick={onManage}>
                  Make one
                </button>
              </>
            ) : (
              "No code matches."
            )}
          </li>
        )}
      </ul>
      <textarea
        data-testid="coding-memo"
        className="cp-memo"
        aria-label="Memo (optional)"
        placeholder="Memo (optional; Ctrl+Enter codes)"
        rows={2}
        value={memo}
        onChange={(e) => setMemo(e.target.value)}
      />
      <div className="cp-actions">
        <span className="muted small">↑↓ choose · Enter code · Esc close</span>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          className="primary"
          data-testid="coding-apply"
          disabled={!active || busy}
          onClick={() => pick(active)}
        >
          Code
        </button>
      </div>
    </div>
  );
}
