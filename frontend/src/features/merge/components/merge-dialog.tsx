"use client";
import { useEffect, useRef } from "react";
import type { MergeState } from "@/features/merge/hooks/use-merge";
import {
  SURFACE_NAMES,
  bringing,
  choosableFields,
  fieldKey,
  fieldText,
  hunkDiff,
  isLinePick,
  kindName,
  pickAll,
  pickableLines,
  toggleLine,
  unresolved,
  valueText,
  type MergeChange,
  type MergeMode,
  type LinePick,
  type Resolution,
  type Resolutions,
} from "@/features/merge/lib/merge";

export interface MergeDialogProps {
  state: MergeState | null;
  onMode: (mode: MergeMode) => void;
  onChoose: (changeId: string, resolution: Resolution | null) => void;
  onApply: () => void;
  onUndo: () => void;
  onClose: () => void;
}

function Sides({ change, label }: { change: MergeChange; label: string }) {
  if (change.surface === "document") {
    return (
      <pre className="merge-diff" data-testid="merge-diff">
        {hunkDiff(change).map((line, i) => (
          <div key={i} className={`diff-line diff-${line.sign === "+" ? "add" : line.sign === "-" ? "del" : "ctx"}`}>
            {line.sign} {line.text}
          </div>
        ))}
      </pre>
    );
  }
  return (
    <dl className="merge-sides">
      <dt>base</dt>
      <dd data-side="base">{valueText(change, "base")}</dd>
      <dt>current path</dt>
      <dd data-side="ours">{valueText(change, "ours")}</dd>
      <dt>step {label}</dt>
      <dd data-side="theirs">{valueText(change, "theirs")}</dd>
    </dl>
  );
}

function Choice({
  change,
  value,
  label,
  onChoose,
}: {
  change: MergeChange;
  value: Resolution | undefined;
  label: string;
  onChoose: MergeDialogProps["onChoose"];
}) {
  if (!change.conflict) {
    return (
      <label className="merge-choice">
        <input
          type="checkbox"
          data-testid="merge-bring"
          checked={value !== "ours"}
          onChange={(e) => onChoose(change.id, e.target.checked ? null : "ours")}
        />{" "}
        bring this in
      </label>
    );
  }
  return (
    <fieldset className="merge-choice" aria-label={`Keep which ${SURFACE_NAMES[change.surface].toLowerCase()}`}>
      <label>
        <input
          type="radio"
          name={`merge-${change.id}`}
          data-testid="merge-choose-ours"
          checked={value === "ours"}
          onChange={() => onChoose(change.id, "ours")}
        />{" "}
        keep the current path’s
      </label>
      <label>
        <input
          type="radio"
          name={`merge-${change.id}`}
          data-testid="merge-choose-theirs"
          checked={value === "theirs"}
          onChange={() => onChoose(change.id, "theirs")}
        />{" "}
        take step {label}’s
      </label>
      {change.surface === "document" && (
        <label title="Keep the current path’s lines, followed by the step’s">
          <input
            type="radio"
            name={`merge-${change.id}`}
            data-testid="merge-choose-both"
            checked={value === "both"}
            onChange={() => onChoose(change.id, "both")}
          />{" "}
          keep both (the current path’s lines, then step {label}’s)
        </label>
      )}
      {change.surface === "document" && (
        <label title="Choose line by line what to keep">
          <input
            type="radio"
            name={`merge-${change.id}`}
            data-testid="merge-choose-lines"
            checked={isLinePick(value)}
            onChange={() => onChoose(change.id, pickAll(change))}
          />{" "}
          pick lines
        </label>
      )}
      {isLinePick(value) && <LinePicker change={change} pick={value} label={label} onChoose={onChoose} />}
    </fieldset>
  );
}

/** A document conflict settled line by line: every line of the hunk, the current
 * path's first, each with a checkbox; the kept lines come in the order listed. */
function LinePicker({
  change,
  pick,
  label,
  onChoose,
}: {
  change: MergeChange;
  pick: LinePick;
  label: string;
  onChoose: MergeDialogProps["onChoose"];
}) {
  const lines = pickableLines(change);
  const kept = lines.filter((l) => pick.lines.some((p) => p.side === l.side && p.n === l.n)).length;
  return (
    <div className="merge-lines" data-testid="merge-lines">
      <p className="muted merge-lines-count" aria-live="polite">
        {kept} of {lines.length} lines kept, in this order
      </p>
      <ul>
        {lines.map((l, i) => {
          const first = i === 0 || lines[i - 1]?.side !== l.side;
          const checked = pick.lines.some((p) => p.side === l.side && p.n === l.n);
          return (
            <li key={`${l.side}:${l.n}`} className={`merge-line merge-line-${l.side}`}>
              {first && (
                <span className="merge-lines-side">{l.side === "ours" ? "current path" : `step ${label}`}</span>
              )}
              <label>
                <input
                  type="checkbox"
                  data-testid="merge-line"
                  data-side={l.side}
                  data-n={l.n}
                  checked={checked}
                  onChange={() => onChoose(change.id, toggleLine(change, pick, l.side, l.n))}
                />{" "}
                {l.text === "" ? <span className="muted">(blank line)</span> : <span>{l.text}</span>}
              </label>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** An item's conflict settled field by field: for each field in conflict, keep the
 * current path's value or take the step's (the fields only the step changed come in). */
function FieldChoices({
  change,
  resolutions,
  label,
  onChoose,
}: {
  change: MergeChange;
  resolutions: Resolutions;
  label: string;
  onChoose: MergeDialogProps["onChoose"];
}) {
  const clean = choosableFields(change).filter((f) => !(change.conflict_fields ?? []).includes(f));
  return (
    <div className="merge-fields">
      {(change.conflict_fields ?? []).map((field) => {
        const key = fieldKey(change, field);
        const value = resolutions[key] ?? resolutions[change.id];
        return (
          <fieldset key={field} className="merge-choice merge-field" data-testid="merge-field" data-field={field}>
            <legend>{field}</legend>
            <label>
              <input
                type="radio"
                name={`merge-${key}`}
                data-testid="merge-field-ours"
                checked={value === "ours"}
                onChange={() => onChoose(key, "ours")}
              />{" "}
              keep “{fieldText(change, "ours", field)}”
            </label>
            <label>
              <input
                type="radio"
                name={`merge-${key}`}
                data-testid="merge-field-theirs"
                checked={value === "theirs"}
                onChange={() => onChoose(key, "theirs")}
              />{" "}
              take step {label}’s “{fieldText(change, "theirs", field)}”
            </label>
          </fieldset>
        );
      })}
      {clean.length > 0 && <p className="muted merge-clean-fields">Also brought in: {clean.join(", ")}.</p>}
    </div>
  );
}

/** The bring-back preview: each change of the plan (conflicts first, each with its
 * choice; a document change as a diff), the mode, and the apply, which then reports
 * what was brought. */
export function MergeDialog({ state, onMode, onChoose, onApply, onUndo, onClose }: MergeDialogProps) {
  // The focus moves into the dialog when it opens (a key, `b`, may have opened it) and
  // goes back where it was when it closes.
  const dialog = useRef<HTMLDivElement>(null);
  const openFor = state?.source ?? null;
  useEffect(() => {
    if (openFor === null) return;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    dialog.current?.focus();
    return () => before?.focus();
  }, [openFor]);
  if (state === null) return null;
  const { plan, label, result } = state;
  const open = unresolved(plan, state.resolutions);
  const count = bringing(plan, state.resolutions);
  const conflicts = plan?.changes.filter((c) => c.conflict).length ?? 0;
  return (
    <div className="overlay" role="presentation">
      <div
        ref={dialog}
        tabIndex={-1}
        className="dialog merge-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="merge-title"
        data-testid="merge-dialog"
      >
        <h2 id="merge-title">Bring step {label} into the current path</h2>
        {result === null && (
          <div className="merge-modes" role="radiogroup" aria-label="What to bring">
            <label>
              <input
                type="radio"
                name="merge-mode"
                data-testid="merge-mode-merge"
                checked={state.mode === "merge"}
                onChange={() => onMode("merge")}
              />{" "}
              everything its path changed
            </label>
            <label>
              <input
                type="radio"
                name="merge-mode"
                data-testid="merge-mode-pick"
                checked={state.mode === "pick"}
                onChange={() => onMode("pick")}
              />{" "}
              only this step’s own change
            </label>
          </div>
        )}
        {result !== null ? (
          <>
            <p className="merge-result" data-testid="merge-result" role="status">
              ✓ {result.description}.
            </p>
            {state.undone !== null ? (
              <p className="merge-result" data-testid="merge-undone" role="status">
                ↶ {state.undone.description}. The bring-in stays in the history.
              </p>
            ) : (
              <p className="muted merge-undo-line">
                Changed your mind?{" "}
                <button type="button" data-testid="merge-undo" disabled={state.undoing} onClick={onUndo}>
                  {state.undoing ? "Undoing…" : "Undo the bring-in"}
                </button>{" "}
                (a new step puts the workspace back as it was)
              </p>
            )}
            {state.undoError !== null && (
              <p className="merge-undo-error" role="alert" data-testid="merge-undo-error">
                {state.undoError}
              </p>
            )}
          </>
        ) : state.loading || plan === null ? (
          <p className="muted">Working out what would change…</p>
        ) : plan.changes.length === 0 ? (
          <p data-testid="merge-empty">Nothing to bring: the current path already has all of it.</p>
        ) : (
          <>
            <p className="muted">
              {plan.changes.length} change{plan.changes.length === 1 ? "" : "s"}
              {conflicts > 0 && `, ${conflicts} in conflict: choose a side for each`}.
            </p>
            <ul className="merge-changes">
              {plan.changes.map((c) => (
                <li
                  key={c.id}
                  data-testid="merge-change"
                  data-change-id={c.id}
                  data-conflict={c.conflict ? "true" : "false"}
                  className={`merge-change ${c.conflict ? "merge-conflict" : ""}`}
                >
                  <div className="merge-change-head">
                    <strong>{SURFACE_NAMES[c.surface]}</strong> <span className="muted">{kindName(c)}</span>
                    {c.conflict && <span className="badge warn">conflict</span>}
                  </div>
                  <Sides change={c} label={label} />
                  {c.conflict && (c.conflict_fields ?? []).length > 0 ? (
                    <FieldChoices change={c} resolutions={state.resolutions} label={label} onChoose={onChoose} />
                  ) : (
                    <Choice change={c} value={state.resolutions[c.id]} label={label} onChoose={onChoose} />
                  )}
                </li>
              ))}
            </ul>
          </>
        )}
        <div className="dialog-actions">
          <button type="button" data-testid="merge-close" onClick={onClose}>
            {result === null ? "Cancel" : "Close"}
          </button>
          {result === null && (
            <button
              type="button"
              className="primary"
              data-testid="merge-apply"
              disabled={plan === null || open.length > 0 || count === 0 || state.applying}
              title={open.length > 0 ? "Choose a side for every conflict first" : undefined}
              onClick={onApply}
            >
              {state.applying ? "Bringing in…" : `Bring in ${count} change${count === 1 ? "" : "s"}`}
            </button>
          )}
        </div>
      </div>
    </div>
  );
}
