"use client";
import { useCallback, useState } from "react";

/** The question the confirm dialog shows, and what each answer does. */
export interface ConfirmState {
  message: string;
  onDiscard: () => void;
  onCancel?: () => void;
}

/** The server's refusal to drop unsaved edits (a checkout, or a send from a draft). */
export const DISCARD_REFUSED = "checkout_would_discard_changes";

/**
 * The discard question as a promise: `ask(message)` opens the confirm dialog and
 * resolves to true when the user chose to discard their edits, false when they kept
 * them. `confirm` is what the dialog shows; `dismiss` closes it.
 */
export function useConfirmDiscard() {
  const [confirm, setConfirm] = useState<ConfirmState | null>(null);
  const ask = useCallback(
    (message: string) =>
      new Promise<boolean>((resolve) =>
        setConfirm({
          message,
          onDiscard: () => {
            setConfirm(null);
            resolve(true);
          },
          onCancel: () => resolve(false),
        }),
      ),
    [],
  );
  const dismiss = useCallback(() => setConfirm(null), []);
  return { confirm, ask, dismiss };
}
