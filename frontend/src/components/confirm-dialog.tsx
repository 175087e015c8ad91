"use client";
import type { ConfirmState } from "@/hooks/use-confirm-discard";

/** The discard confirmation: the server's refusal (`checkout_would_discard_changes`)
 * shown with its message; "discard" retries with force. */
export function ConfirmDialog({ state, onCancel }: { state: ConfirmState | null; onCancel: () => void }) {
  if (state === null) return null;
  return (
    <div className="overlay" role="presentation">
      <div
        className="dialog"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby="confirm-title"
        data-testid="confirm-dialog"
      >
        <h2 id="confirm-title">Discard your edits?</h2>
        <p>{state.message}</p>
        <div className="dialog-actions">
          <button
            type="button"
            data-testid="confirm-cancel"
            autoFocus
            onClick={() => {
              state.onCancel?.();
              onCancel();
            }}
          >
            Keep editing
          </button>
          <button type="button" className="danger" data-testid="confirm-discard" onClick={state.onDiscard}>
            Discard edits
          </button>
        </div>
      </div>
    </div>
  );
}
