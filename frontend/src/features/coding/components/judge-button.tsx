"use client";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { useCodingActions } from "@/features/coding/hooks/use-coding-data";
import { useCodingView } from "@/features/coding/hooks/use-coding";
import { splitNode } from "@/features/ledger/hooks/use-ledger";
import { rivals, type Preferred } from "@/features/coding/lib/judgments";
import { useStepNames } from "@/hooks/use-step-names";
import { messageOf } from "@/lib/api/client";

/** "Which is better?" on a sibling switcher: this step against one of its siblings,
 * a, b or a tie, by a criterion, with a rationale (a judgment of the family). */
export function JudgeButton({ nodeId, siblings }: { nodeId: string; siblings: readonly string[] }) {
  const { canCode } = useCodingView();
  const [open, setOpen] = useState(false);
  if (!canCode || rivals(nodeId, siblings).length === 0) return null;
  return (
    <span className="judge">
      <button
        type="button"
        className="link small"
        data-testid="judge-button"
        data-node-id={nodeId}
        aria-expanded={open}
        onClick={() => setOpen((v) => !v)}
      >
        Which is better?
      </button>
      {open && <JudgeForm nodeId={nodeId} siblings={siblings} onDone={() => setOpen(false)} />}
    </span>
  );
}

function JudgeForm({ nodeId, siblings, onDone }: { nodeId: string; siblings: readonly string[]; onDone: () => void }) {
  const { labels } = useStepNames();
  const { judge, judging } = useCodingActions();
  const others = rivals(nodeId, siblings);
  const [other, setOther] = useState(others[0] ?? "");
  const [preferred, setPreferred] = useState<Preferred | null>(null);
  const [criterion, setCriterion] = useState("");
  const [rationale, setRationale] = useState("");
  const [error, setError] = useState<string | null>(null);
  const first = useRef<HTMLSelectElement>(null);
  const box = useRef<HTMLFormElement>(null);
  useEffect(() => {
    first.current?.focus();
    // the chat scrolls: the whole form comes into view
    box.current?.scrollIntoView({ block: "nearest" });
  }, []);
  const label = (id: string) => labels.get(id) ?? id.slice(id.lastIndexOf(":") + 1);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (preferred === null || !other) return;
    try {
      await judge({
        thread: splitNode(nodeId)[0],
        body: {
          a: nodeId,
          b: other,
          preferred,
          ...(criterion.trim() ? { criterion: criterion.trim() } : {}),
          ...(rationale.trim() ? { rationale: rationale.trim() } : {}),
        },
      });
      onDone();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const choices: readonly [Preferred, string][] = [
    ["a", `Step ${label(nodeId)}`],
    ["b", `Step ${label(other)}`],
    ["tie", "As good"],
  ];
  return (
    <form
      ref={box}
      className="judge-form"
      data-testid="judge-form"
      aria-label="Which is better?"
      onSubmit={(e) => void submit(e)}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          onDone();
        }
      }}
    >
      <label className="small">
        Step {label(nodeId)} against{" "}
        <select ref={first} data-testid="judge-other" value={other} onChange={(e) => setOther(e.target.value)}>
          {others.map((o) => (
            <option key={o} value={o}>
              step {label(o)}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="judge-choice">
        <legend className="small">Better</legend>
        {choices.map(([value, text]) => (
          <label key={value} className="small">
            <input
              type="radio"
              name={`judge-${nodeId}`}
              data-testid={`judge-${value}`}
              checked={preferred === value}
              onChange={() => setPreferred(value)}
            />{" "}
            {text}
          </label>
        ))}
      </fieldset>
      <input
        data-testid="judge-criterion"
        aria-label="Criterion"
        placeholder="Criterion, e.g. clarity"
        value={criterion}
        onChange={(e) => setCriterion(e.target.value)}
      />
      <textarea
        data-testid="judge-rationale"
        aria-label="Rationale"
        placeholder="Why (optional)"
        rows={2}
        value={rationale}
        onChange={(e) => setRationale(e.target.value)}
      />
      {error && <p className="small err-text">{error}</p>}
      <div className="cp-actions">
        <button type="button" onClick={onDone}>
          Cancel
        </button>
        <button type="submit" className="primary" data-testid="judge-submit" disabled={preferred === null || judging}>
          Save judgment
        </button>
      </div>
    </form>
  );
}
