"use client";
import { useMemo, useState, type ReactNode } from "react";
import { PairJudge } from "@/features/coding/components/pair-judge";
import { PathsCompare } from "@/features/whatif/components/paths-compare";
import { inStepLabels, stepName } from "@/features/whatif/lib/whatif";
import { useStepNames } from "@/hooks/use-step-names";
import { useAccess } from "@/hooks/use-access";
import { useComparison } from "@/hooks/use-studio-data";
import { ApiError } from "@/lib/api/client";
import { comparisonSummary, describeFields, parseUnifiedDiff, type Comparison, type Rejected } from "@/lib/research";

type CompareNode = Comparison["a"];

export interface CompareViewProps {
  /** a thread of the family, for the request's path */
  thread: string;
  a: string;
  b: string;
  /** node id → its step label, for the nodes on the graph */
  labels: ReadonlyMap<string, string>;
  /** node id → its user message, for the nodes on the graph */
  questions: ReadonlyMap<string, string>;
  onSwap: () => void;
  onClose: () => void;
  onRestore: (nodeId: string) => void;
}

function labelOf(node: CompareNode | null, labels: ReadonlyMap<string, string>): string {
  if (node === null) return "—";
  const known = labels.get(node.node_id);
  if (known !== undefined) return `step ${known}`;
  return `step ${node.turn_index} of another family`;
}

function ancestorText(c: Comparison, labels: ReadonlyMap<string, string>): string {
  const ancestor = c.common_ancestor;
  if (ancestor === null) return "No common ancestor: these steps share no history.";
  const side =
    ancestor.node_id === c.a.node_id
      ? " (the before side itself)"
      : ancestor.node_id === c.b.node_id
        ? " (the after side itself)"
        : "";
  return `Common ancestor: ${labelOf(ancestor, labels)}${side}`;
}

function Value({ text, testId }: { text: string | null; testId: string }) {
  return text ? (
    <span data-testid={testId}>{text}</span>
  ) : (
    <span className="muted" data-testid={testId}>
      (none)
    </span>
  );
}

function RejectedList({ items, testId }: { items: readonly Rejected[]; testId: string }) {
  if (items.length === 0)
    return (
      <p className="muted small" data-testid={testId}>
        none
      </p>
    );
  return (
    <ul className="cmp-list" data-testid={testId}>
      {items.map((r) => (
        <li key={r.uid} className="cmp-rejected" data-testid="compare-rejected-item" data-uid={r.uid}>
          <s>{r.text}</s>{" "}
          <span className="muted small">
            · {r.surface} · after step {r.rejected_after_turn}
          </span>
        </li>
      ))}
    </ul>
  );
}

function Diff({ diff }: { diff: string }) {
  const parsed = useMemo(() => parseUnifiedDiff(diff), [diff]);
  if (parsed.rows.length === 0) return <p className="muted small">The document is the same on both sides.</p>;
  return (
    <div className="diff" data-testid="compare-diff">
      {parsed.rows.map((row, i) =>
        row.kind === "hunk" ? (
          <div key={i} className="diff-row hunk">
            <span className="ln" />
            <span className="ln" />
            <span className="diff-text">{row.text}</span>
          </div>
        ) : (
          <div key={i} className={`diff-row ${row.kind}`} data-testid="diff-line" data-kind={row.kind}>
            <span className="ln">{row.oldNo ?? ""}</span>
            <span className="ln">{row.newNo ?? ""}</span>
            <span className="diff-text">
              <span className="sign">{row.kind === "add" ? "+" : row.kind === "del" ? "−" : " "}</span>
              {row.text}
            </span>
          </div>
        ),
      )}
    </div>
  );
}

function Items({ c }: { c: Comparison }) {
  const rows: { key: string; kind: "add" | "del" | "chg"; surface: string; text: ReactNode }[] = [];
  for (const p of c.preferences.added)
    rows.push({ key: `pa${p.uid}`, kind: "add", surface: "preference", text: `${p.text}${p.locked ? " 🔒" : ""}` });
  for (const p of c.preferences.removed)
    rows.push({ key: `pr${p.uid}`, kind: "del", surface: "preference", text: <s>{p.text}</s> });
  for (const ch of c.preferences.changed) {
    rows.push({
      key: `pc${ch.uid}`,
      kind: "chg",
      surface: "preference",
      text: (
        <>
          {ch.fields.includes("text") ? (
            <>
              <s>{ch.before.text}</s> → {ch.after.text}
            </>
          ) : (
            ch.after.text
          )}
          <span className="muted small">
            {" "}
            · {describeFields(ch.fields)}
            {ch.fields.includes("locked") ? (ch.after.locked ? ": locked" : ": unlocked") : ""}
          </span>
        </>
      ),
    });
  }
  for (const t of c.todos.added)
    rows.push({
      key: `ta${t.uid}`,
      kind: "add",
      surface: "todo",
      text: `${"  ".repeat(t.depth)}${t.done ? "☑" : "☐"} ${t.text}`,
    });
  for (const t of c.todos.removed)
    rows.push({ key: `tr${t.uid}`, kind: "del", surface: "todo", text: <s>{t.text}</s> });
  for (const ch of c.todos.changed) {
    const notes: string[] = [];
    if (ch.fields.includes("done")) notes.push(ch.after.done ? "done" : "not done");
    if (ch.fields.includes("depth")) notes.push(`depth ${ch.before.depth} → ${ch.after.depth}`);
    rows.push({
      key: `tc${ch.uid}`,
      kind: "chg",
      surface: "todo",
      text: (
        <>
          {ch.fields.includes("text") ? (
            <>
              <s>{ch.before.text}</s> → {ch.after.text}
            </>
          ) : (
            ch.after.text
          )}
          {notes.length > 0 && <span className="muted small"> · {notes.join(", ")}</span>}
        </>
      ),
    });
  }
  if (rows.length === 0) return <p className="muted small">No preference or todo differs.</p>;
  const sign = { add: "+", del: "−", chg: "~" } as const;
  return (
    <ul className="cmp-list">
      {rows.map((r) => (
        <li
          key={r.key}
          className={`cmp-item ${r.kind}`}
          data-testid="compare-item"
          data-kind={r.kind}
          data-surface={r.surface}
        >
          <span className="sign">{sign[r.kind]}</span>
          <span className="muted small">{r.surface}</span> {r.text}
        </li>
      ))}
    </ul>
  );
}

/** Two steps side by side (`b` against `a`): objective, the document diff, preferences
 * and todos matched by uid, artifacts, and the decisions each side had rejected. */
export function CompareView(props: CompareViewProps) {
  const { a, b, labels } = props;
  const q = useComparison(props.thread, a, b);
  const { edit } = useAccess();
  const [paths, setPaths] = useState(false);
  const names = useStepNames();
  const c = q.data;
  const summary = c ? comparisonSummary(c) : [];
  const side = (which: "a" | "b", node: CompareNode | undefined, id: string) => (
    <div className={`cmp-side side-${which}`} data-testid={`compare-side-${which}`} data-node-id={id}>
      <div className="cmp-side-head">
        <span className={`picked-dot dot-${which}`} />
        <strong>
          {which === "a" ? "Before" : "After"} · {node ? labelOf(node, labels) : `step ${stepName(id, labels)}`}
        </strong>
        {edit && (
          <button type="button" className="small-btn" title="Restore this step" onClick={() => props.onRestore(id)}>
            ↺ restore
          </button>
        )}
      </div>
      <div className="clamp muted small">{props.questions.get(id) ?? ""}</div>
    </div>
  );

  return (
    <section className="compare" data-testid="compare-view" data-a={a} data-b={b} aria-label="Comparison">
      <header className="compare-head">
        <h2>Compare</h2>
        <span className="compare-summary" data-testid="compare-summary">
          {q.isLoading ? "Comparing…" : c && (summary.length === 0 ? "no differences" : summary.join(" · "))}
        </span>
        <span className="spacer" />
        <PairJudge a={a} b={b} />
        <button
          type="button"
          className="small-btn"
          data-testid="compare-paths"
          title="Line up the two paths that lead to these steps, step by step, from the step they share"
          onClick={() => setPaths(true)}
        >
          ☰ compare paths
        </button>
        <button
          type="button"
          className="small-btn"
          data-testid="compare-swap"
          title="Swap the two sides"
          onClick={props.onSwap}
        >
          ⇆ swap
        </button>
        <button
          type="button"
          className="icon"
          data-testid="compare-close"
          aria-label="Close the comparison"
          onClick={props.onClose}
        >
          ✕
        </button>
      </header>
      <div className="compare-body">
        <div className="cmp-sides">
          {side("a", c?.a, a)}
          {side("b", c?.b, b)}
        </div>
        {q.error ? (
          <p className="cmp-error" role="alert">
            {q.error instanceof ApiError
              ? inStepLabels(q.error.message, labels, names.branches)
              : "The comparison could not be loaded."}
          </p>
        ) : !c ? (
          <p className="muted">Loading the comparison…</p>
        ) : (
          <>
            <p
              className="cmp-ancestor small"
              data-testid="compare-ancestor"
              data-node-id={c.common_ancestor?.node_id ?? ""}
            >
              {ancestorText(c, labels)}
            </p>
            <h3>Objective {!c.objective.changed && <span className="muted small">· unchanged</span>}</h3>
            <div className="cmp-sides">
              <div className={`cmp-value ${c.objective.changed ? "del" : ""}`}>
                <Value text={c.objective.before} testId="compare-objective-before" />
              </div>
              <div className={`cmp-value ${c.objective.changed ? "add" : ""}`}>
                <Value text={c.objective.after} testId="compare-objective-after" />
              </div>
            </div>
            <h3>
              Document{" "}
              <span className="small">
                <span className="count add" data-testid="compare-added-lines">
                  +{c.document.added_lines}
                </span>{" "}
                <span className="count del" data-testid="compare-removed-lines">
                  −{c.document.removed_lines}
                </span>
              </span>
              {c.document.title_before !== c.document.title_after && (
                <span className="muted small">
                  {" "}
                  · title: {c.document.title_before ?? "(none)"} → {c.document.title_after ?? "(none)"}
                </span>
              )}
            </h3>
            <Diff diff={c.document.diff} />
            <h3>Preferences and todos</h3>
            <Items c={c} />
            <h3>Artifacts</h3>
            {c.artifacts.added.length + c.artifacts.removed.length === 0 ? (
              <p className="muted small">No artifact differs.</p>
            ) : (
              <ul className="cmp-list">
                {c.artifacts.added.map((x) => (
                  <li key={`a${x.id}`} className="cmp-item add" data-testid="compare-artifact" data-kind="add">
                    <span className="sign">+</span> {x.title} <span className="muted small">· step {x.turn_index}</span>
                  </li>
                ))}
                {c.artifacts.removed.map((x) => (
                  <li key={`r${x.id}`} className="cmp-item del" data-testid="compare-artifact" data-kind="del">
                    <span className="sign">−</span> <s>{x.title}</s>{" "}
                    <span className="muted small">· step {x.turn_index}</span>
                  </li>
                ))}
              </ul>
            )}
            <h3>Rejected decisions</h3>
            <div className="cmp-sides">
              <div>
                <div className="cmp-col-head small">before · {labelOf(c.a, labels)}</div>
                <RejectedList items={c.rejected.a} testId="compare-rejected-a" />
              </div>
              <div>
                <div className="cmp-col-head small">after · {labelOf(c.b, labels)}</div>
                <RejectedList items={c.rejected.b} testId="compare-rejected-b" />
              </div>
            </div>
          </>
        )}
      </div>
      {paths && <PathsCompare thread={props.thread} a={a} b={b} onClose={() => setPaths(false)} />}
    </section>
  );
}
