"use client";
import { useState } from "react";
import { useBranchProfile, useHeadNode, useProfiles } from "@/features/whatif/hooks/use-whatif";
import { ReplayDialog } from "./replay-dialog";
import { TryAlternatives } from "./try-alternatives";
import { messageOf } from "@/lib/api/client";

export interface WhatIfActionsProps {
  nodeId: string;
  label: string;
  onError: (message: string) => void;
  /** pick the end of a replay from this step on the graph (the dialog's "a step I pick") */
  onReplayRange?: (from: string) => void;
}

/** A step's "what if" actions: the branch's profile, "Replay with…" (the dialog), and
 * "Try 3 alternatives" in one click (also in every card's step menu). */
export function WhatIfActions({ nodeId, label, onError, onReplayRange }: WhatIfActionsProps) {
  const thread = nodeId.slice(0, nodeId.lastIndexOf(":"));
  const profiles = useProfiles();
  const { profileId, setProfile } = useBranchProfile(thread);
  const head = useHeadNode(thread);
  const [dialog, setDialog] = useState(false);

  return (
    <section className="what-if" data-testid="what-if">
      <h4>What if</h4>
      <label className="small">
        This branch runs with{" "}
        <select
          data-testid="profile-picker"
          value={profileId}
          onChange={(e) => void setProfile(e.target.value).catch((err) => onError(messageOf(err)))}
        >
          {(profiles.data ?? []).map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <div className="what-if-actions">
        <button type="button" data-testid="replay-open" onClick={() => setDialog(true)}>
          Replay with…
        </button>
        <TryAlternatives nodeId={nodeId} />
      </div>
      {dialog && (
        <ReplayDialog
          nodeId={nodeId}
          label={label}
          headNode={head}
          profileId={profileId}
          onPickEnd={
            onReplayRange &&
            (() => {
              setDialog(false);
              onReplayRange(nodeId);
            })
          }
          onClose={() => setDialog(false)}
          onError={onError}
        />
      )}
    </section>
  );
}
