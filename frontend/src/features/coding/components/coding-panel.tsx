"use client";
import { useCodebooks, type useCodingActions } from "@/features/coding/hooks/use-coding-data";
import type { CodingView } from "@/features/coding/hooks/use-coding";
import { messageOf } from "@/lib/api/client";
import { AgreementView } from "./agreement-view";
import { CodebookEditor } from "./codebook-editor";

export interface CodingPanelProps {
  /** the family's root thread */
  thread: string;
  view: CodingView;
  actions: ReturnType<typeof useCodingActions>;
  label: (nodeId: string) => string;
  onShowStep: (nodeId: string) => void;
  onClose: () => void;
  onError: (message: string) => void;
}

/** The family's coding in one drawer: whether it is blind (the owner's "Reveal
 * codings"), the agreement between the coders and their disagreements, and the
 * codebooks (the owner's to make and change; a coder reads them). */
export function CodingPanel({ thread, view, actions, label, onShowStep, onClose, onError }: CodingPanelProps) {
  const own = useCodebooks(null, view.owner);
  const seesAll = view.owner || view.revealed;
  return (
    <aside className="coding-panel node-details" data-testid="coding-panel" aria-label="Coding">
      <header>
        <strong>Coding</strong>
        <span
          className={`badge ${view.revealed ? "" : "warn"}`}
          data-testid="coding-state"
          data-revealed={view.revealed ? "true" : "false"}
        >
          {view.revealed ? "revealed" : "blind"}
        </span>
        <span className="spacer" />
        <button type="button" className="icon" aria-label="Close coding" onClick={onClose}>
          ✕
        </button>
      </header>
      <div className="nd-body">
        <section>
          <p className="small" data-testid="coding-blind-note">
            {blindNote(view)}
          </p>
          {view.owner && (
            <button
              type="button"
              data-testid="coding-reveal"
              className={view.revealed ? "" : "primary"}
              disabled={actions.revealing}
              onClick={() =>
                void actions.reveal({ thread, reveal: !view.revealed }).catch((e: unknown) => onError(messageOf(e)))
              }
            >
              {revealLabel(view)}
            </button>
          )}
        </section>
        <section>
          <h4>Agreement</h4>
          {seesAll ? (
            <AgreementView thread={thread} view={view} label={label} onShowStep={onShowStep} />
          ) : (
            <p className="muted small">The agreement is shown once the {whoReveals(view)} reveals the codings.</p>
          )}
        </section>
        <section>
          <h4>Codebooks</h4>
          {view.owner ? (
            <CodebookEditor books={own.data ?? []} actions={actions} onError={onError} />
          ) : view.live.length === 0 ? (
            <p className="muted small">The owner has no codebook yet.</p>
          ) : (
            <ul className="code-list">
              {view.live.map((c) => (
                <li key={c.id} className="code-row">
                  <span className="code-dot" style={{ background: c.color ?? undefined }} aria-hidden /> {c.name}{" "}
                  <span className="muted small">{c.book}</span>
                </li>
              ))}
            </ul>
          )}
        </section>
      </div>
    </aside>
  );
}

/** Who reveals: the family's owner, or on a study's family the study's owner. */
function whoReveals(view: CodingView): string {
  return view.study === null ? "owner" : "study's owner";
}

function blindNote(view: CodingView): string {
  const where = view.study === null ? "this family" : `every family of the study “${view.study}”`;
  if (view.revealed) return `Every coder sees every coding of ${where}.`;
  if (view.owner) {
    return view.study === null
      ? "Blind coding: each coder sees only their own codings; you, the owner, see all."
      : `Blind coding: each coder sees only their own codings; you run the study “${view.study}” and see all.`;
  }
  return `Blind coding: you see only your own codings until the ${whoReveals(view)} reveals them.`;
}

function revealLabel(view: CodingView): string {
  if (view.study === null) return view.revealed ? "Make coding blind again" : "Reveal codings";
  return view.revealed ? "Make the study's coding blind again" : "Reveal the study's codings";
}
