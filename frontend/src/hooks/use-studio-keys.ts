"use client";
import { useState } from "react";
import type { Trajectory } from "@/features/graph/hooks/use-trajectory";
import type { useCardActions } from "./use-card-actions";
import type { useConfirmDiscard } from "./use-confirm-discard";
import { usePageKeys } from "./use-page-keys";

/** Moves the keyboard focus to the element a test id names. */
export function toField(testId: string): () => void {
  return () => document.querySelector<HTMLElement>(`[data-testid="${testId}"]`)?.focus();
}

/**
 * The page's keys (lib/keymap): `?` the keys overlay, the fields' shortcuts, a new
 * conversation, and Escape, which leaves the innermost thing open: the overlay, the
 * merge dialog, the step menu, the discard question, a step's details, the coding
 * drawer, a replay's range, a comparison being picked, the maximised graph, and last a
 * restore (the way back, for whom may write).
 */
export function useStudioKeys({
  actions,
  confirm,
  trajectory,
  canEdit,
  restored,
  newConversation,
  code,
  closeCoding,
}: {
  actions: ReturnType<typeof useCardActions>;
  confirm: ReturnType<typeof useConfirmDiscard>;
  trajectory: Trajectory;
  canEdit: boolean;
  restored: boolean;
  newConversation: () => Promise<void>;
  /** `k`: code the selected text or the focused step */
  code: () => void;
  /** closes the coding drawer when it is open (false: it was not) */
  closeCoding: () => boolean;
}) {
  const [showKeys, setShowKeys] = useState(false);
  const { merging, keys, whatif } = actions;
  const { focus, wayBack } = trajectory;
  usePageKeys({
    help: () => setShowKeys((v) => !v),
    composer: toField("message-input"),
    search: toField("search-input"),
    graph: toField("graph-keys"),
    new: () => void newConversation(),
    code,
    leave: () => {
      if (showKeys) setShowKeys(false);
      else if (merging.merge !== null) merging.close();
      else if (keys.menu !== null) {
        keys.closeMenu();
        toField("graph-keys")();
      } else if (confirm.confirm !== null) confirm.dismiss();
      else if (trajectory.detailsNode !== null) trajectory.closeDetails();
      else if (closeCoding()) return;
      else if (whatif.range !== null) whatif.closeRange();
      else if (focus.pick.a !== null) focus.onCancelCompare();
      else if (trajectory.size.maximised) trajectory.size.toggleMaximised();
      else if (restored && canEdit) void wayBack.back();
    },
  });
  return { showKeys, setShowKeys };
}
