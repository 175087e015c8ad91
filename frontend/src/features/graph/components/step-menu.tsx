"use client";
import { useEffect, useRef } from "react";
import { useAccess } from "@/hooks/use-access";
import { useFeatures } from "@/features/studies/hooks/use-features";
import type { Fold } from "@/features/graph/lib/big-trees";
import type { FlowCard } from "@/features/graph/lib/graph";
import { TryAlternatives } from "@/features/whatif/components/try-alternatives";

export interface StepMenuProps {
  card: FlowCard;
  /** a step is picked for a comparison: this one would be its other side */
  comparing: boolean;
  onRestore: (nodeId: string) => void;
  onCompare: (nodeId: string) => void;
  /** opens the merge preview (useMerge().open) */
  onBringIn: (nodeId: string) => void;
  onShow: (nodeId: string) => void;
  /** opens the step's details drawer */
  onDetails: (nodeId: string) => void;
  /** the card's branch can be folded (its fold state), and the fold action */
  fold?: Fold | null;
  onFold?: (threadId: string) => void;
  /** "Replay from here…" (starts picking a range on the graph), or "Replay to here"
   * while a range is being picked (`replayTo`) */
  onReplay?: (nodeId: string) => void;
  replayTo?: boolean;
  onClose: () => void;
}

/** A step's menu: opened by Enter on the selected step or a long press on a card.
 * Focus goes to its first action; Escape (the page's "leave" key) closes it. A viewer
 * or commenter of a shared family is offered no restore, bring-in or alternatives. */
export function StepMenu({
  card,
  comparing,
  onRestore,
  onCompare,
  onBringIn,
  onShow,
  onDetails,
  fold,
  onFold,
  onReplay,
  replayTo,
  onClose,
}: StepMenuProps) {
  const first = useRef<HTMLButtonElement>(null);
  const access = useAccess();
  const features = useFeatures();
  // (what a study's condition turns off is not offered either)
  const edit = access.edit && features.branching;
  const bring = access.edit && features.merge;
  const whatif = access.edit && features.whatif;
  useEffect(() => first.current?.focus(), [card.id]);
  const run = (fn: (id: string) => void) => () => {
    onClose();
    fn(card.id);
  };
  return (
    <div
      className="step-menu"
      role="dialog"
      aria-label={`Step ${card.label}`}
      data-testid="step-menu"
      data-node-id={card.id}
    >
      <div className="step-menu-head">
        <strong>Step {card.label}</strong>
        <span className="muted step-menu-q">{card.question || "(no message)"}</span>
      </div>
      <div className="step-menu-actions">
        {edit && (
          <button
            type="button"
            ref={first}
            className="primary"
            data-testid="step-menu-restore"
            onClick={run(onRestore)}
          >
            ↺ Restore
          </button>
        )}
        <button type="button" ref={edit ? undefined : first} data-testid="step-menu-compare" onClick={run(onCompare)}>
          ⇄ {comparing ? "Compare with this step" : "Compare…"}
        </button>
        {card.active && (
          <button type="button" data-testid="step-menu-show" onClick={run(onShow)}>
            Show in chat
          </button>
        )}
        <button type="button" data-testid="step-menu-details" onClick={run(onDetails)}>
          Details, notes and export…
        </button>
        {bring && !card.head && (
          <button type="button" data-testid="step-menu-bring" onClick={run(onBringIn)}>
            ⤵ Bring into current path…
          </button>
        )}
        {fold && onFold && (
          <button
            type="button"
            data-testid="step-menu-fold"
            onClick={() => {
              onClose();
              onFold(card.threadId);
            }}
          >
            {fold.folded ? `▸ Expand this branch (${fold.hidden} hidden)` : "▾ Collapse this branch"}
          </button>
        )}
        {whatif && onReplay && (
          <button type="button" data-testid="step-menu-replay" onClick={run(onReplay)}>
            ⟳ {replayTo ? "Replay to here" : "Replay from here…"}
          </button>
        )}
        {whatif && card.kind === "turn" && !card.merge && <TryAlternatives nodeId={card.id} />}
        <button type="button" data-testid="step-menu-close" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
