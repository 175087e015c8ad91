"use client";
import { useState, type FormEvent } from "react";
import { useAccess } from "@/hooks/use-access";
import { useFeatures } from "@/features/studies/hooks/use-features";
import { useFamilyUsage, useNodeDetails, useNoteActions, usePathDownload } from "@/features/ledger/hooks/use-ledger";
import {
  formatCost,
  formatCount,
  parseCodes,
  provenanceRows,
  usageTotals,
  type BranchUsage,
} from "@/features/ledger/lib/ledger";
import { StepJudgments } from "@/features/coding/components/step-judgments";
import { WhatIfActions } from "@/features/whatif/components/what-if-actions";
import { messageOf } from "@/lib/api/client";

export interface NodeDetailsProps {
  nodeId: string;
  /** the node's step label ("3.1") */
  label: string;
  /** the conversation's title, for the path document's file name */
  title: string;
  /** thread id → its lane label ("main", a branch name, or its first step) */
  branchLabels: ReadonlyMap<string, string>;
  onClose: () => void;
  onError: (message: string) => void;
  /** pick, on the graph, the end of a replay from this step */
  onReplayRange?: (from: string) => void;
}

/** A step's details: who made it when not the family's owner ("sent by" an editor of a
 * shared family), its provenance, its notes (never shown to the model) with a form to
 * add one (not for a viewer), "Export this path" (Markdown or HTML), the step's "what
 * if" actions (an editor's), and the family's usage per branch. */
export function NodeDetails(props: NodeDetailsProps) {
  const { nodeId, label, title, branchLabels, onClose, onError } = props;
  const details = useNodeDetails(nodeId);
  const node = details.data;
  const { addNote, deleteNote, saving } = useNoteActions();
  const download = usePathDownload();
  const access = useAccess();
  const features = useFeatures();
  const [text, setText] = useState("");
  const [codes, setCodes] = useState("");

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!text.trim()) return;
    try {
      await addNote({ nodeId, text: text.trim(), codes: parseCodes(codes) });
      setText("");
      setCodes("");
    } catch (err) {
      onError(messageOf(err));
    }
  };

  return (
    <aside className="node-details" data-testid="node-details" data-node-id={nodeId} aria-label={`Step ${label}`}>
      <header>
        <strong>Step {label}</strong>
        {node && node.state !== "complete" && <span className="badge warn">{node.state}</span>}
        <span className="spacer" />
        <span className="path-export" data-testid="path-export">
          Export this path:
          {(["md", "html"] as const).map((format) => (
            <button
              key={format}
              type="button"
              className="link"
              data-testid={`path-export-${format}`}
              onClick={() => void download(nodeId, format, title, label).catch((err) => onError(messageOf(err)))}
            >
              {format === "md" ? "Markdown" : "HTML (print to PDF)"}
            </button>
          ))}
        </span>
        <button type="button" className="icon" aria-label="Close the step's details" onClick={onClose}>
          ✕
        </button>
      </header>
      {details.isLoading && <p className="muted small">Loading…</p>}
      {details.error && <p className="muted small">{messageOf(details.error)}</p>}
      {node && (
        <div className="nd-body">
          <section>
            {node.author && (
              <p className="node-author" data-testid="node-author">
                {node.kind === "merge" ? "Brought in by" : "Sent by"} <strong>{node.author}</strong>
              </p>
            )}
            <h4>Provenance</h4>
            <dl className="provenance" data-testid="provenance">
              {provenanceRows(node.provenance).map(([k, v]) => (
                <div key={k}>
                  <dt>{k}</dt>
                  <dd data-field={k.toLowerCase().replace(/ /g, "-")}>{v}</dd>
                </div>
              ))}
            </dl>
            {node.edits.length > 0 && (
              <p className="muted small" data-testid="node-edits">
                Changes: {node.edits.filter((e) => e.origin === "agent").length} by the agent,{" "}
                {node.edits.filter((e) => e.origin === "user").length} by hand
              </p>
            )}
          </section>
          <section>
            <h4>Notes</h4>
            <p className="muted small">For the people who see this family: the model never does.</p>
            <ul className="notes">
              {node.notes.map((n) => (
                <li key={n.id} data-testid="note-item" data-note-id={n.id}>
                  <span className="note-text">{n.text}</span>
                  <span className="muted small note-author">— {n.author}</span>
                  {n.codes.map((c) => (
                    <span key={c} className="code-chip" data-testid="note-code">
                      {c}
                    </span>
                  ))}
                  {access.note && n.mine && (
                    <button
                      type="button"
                      className="icon"
                      aria-label="Delete this note"
                      data-testid="note-delete"
                      onClick={() => void deleteNote(n.id).catch((err) => onError(messageOf(err)))}
                    >
                      ✕
                    </button>
                  )}
                </li>
              ))}
            </ul>
            {access.note && (
              <form className="note-form" onSubmit={(e) => void submit(e)}>
                <textarea
                  data-testid="note-input"
                  placeholder="A note on this step…"
                  value={text}
                  rows={2}
                  onChange={(e) => setText(e.target.value)}
                />
                <input
                  data-testid="note-codes"
                  placeholder="codes, comma-separated"
                  value={codes}
                  onChange={(e) => setCodes(e.target.value)}
                />
                <button type="submit" data-testid="note-submit" disabled={saving || !text.trim()}>
                  Add note
                </button>
              </form>
            )}
          </section>
          <StepJudgments nodeId={nodeId} />
          {access.edit && features.whatif && (
            <WhatIfActions nodeId={nodeId} label={label} onError={onError} onReplayRange={props.onReplayRange} />
          )}
          <UsageSummary thread={nodeId.slice(0, nodeId.lastIndexOf(":"))} branchLabels={branchLabels} />
        </div>
      )}
    </aside>
  );
}

function UsageSummary({ thread, branchLabels }: { thread: string; branchLabels: ReadonlyMap<string, string> }) {
  const usage = useFamilyUsage(thread);
  const rows: readonly BranchUsage[] = usage.data ?? [];
  if (rows.length === 0) return null;
  const total = usageTotals(rows);
  return (
    <section>
      <h4>This family&apos;s usage</h4>
      <table className="usage" data-testid="usage-summary">
        <thead>
          <tr>
            <th>branch</th>
            <th>steps</th>
            <th>tokens in</th>
            <th>tokens out</th>
            <th>cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.thread_id} data-testid="usage-row" data-thread-id={r.thread_id}>
              <td>{r.name ?? branchLabels.get(r.thread_id) ?? r.thread_id.slice(0, 9)}</td>
              <td>{r.nodes}</td>
              <td>{formatCount(r.input_tokens)}</td>
              <td>{formatCount(r.output_tokens)}</td>
              <td>{formatCost(r.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <td>all</td>
            <td>{total.nodes}</td>
            <td>{formatCount(total.input)}</td>
            <td>{formatCount(total.output)}</td>
            <td>{formatCost(total.cost)}</td>
          </tr>
        </tfoot>
      </table>
      {total.estimated && <p className="muted small">Some counts are estimates (no usage report from the model).</p>}
    </section>
  );
}
