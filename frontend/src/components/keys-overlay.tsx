"use client";
import { useEffect, useRef } from "react";
import { KEYMAP, keyName } from "@/lib/keymap";
import { LABEL_LEGEND } from "@/lib/where";

/** What the step labels mean: 1, 2, 3 · 3.1 · 5.1.1. */
export function LabelLegend() {
  return (
    <dl className="legend" data-testid="label-legend">
      {LABEL_LEGEND.map((l) => (
        <div key={l.example}>
          <dt>{l.example}</dt>
          <dd>{l.meaning}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The `?` list: every key of the studio (lib/keymap) and what the labels mean. */
export function KeysOverlay({ open, onClose }: { open: boolean; onClose: () => void }) {
  const closeButton = useRef<HTMLButtonElement>(null);
  // Focus goes into the list, and back to where it was when the list closes.
  useEffect(() => {
    if (!open) return;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    closeButton.current?.focus();
    return () => before?.focus();
  }, [open]);
  if (!open) return null;
  const scopes = [
    { scope: "page", title: "Anywhere (outside a text field)" },
    { scope: "graph", title: "In the trajectory (press g to go there)" },
  ] as const;
  return (
    <div className="overlay" role="presentation" onClick={onClose}>
      <div
        className="dialog keys-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="keys-title"
        data-testid="keys-overlay"
        onClick={(e) => e.stopPropagation()}
      >
        <h2 id="keys-title">Keys</h2>
        {scopes.map(({ scope, title }) => (
          <section key={scope}>
            <h3>{title}</h3>
            <table className="keys">
              <tbody>
                {KEYMAP.filter((b) => b.scope === scope).map((b) => (
                  <tr key={b.action} data-testid="key-binding" data-action={b.action}>
                    <th scope="row">
                      {b.keys.map((k) => (
                        <kbd key={k}>{keyName(k)}</kbd>
                      ))}
                    </th>
                    <td>
                      {b.what}
                      {b.pending && <span className="muted"> ({b.pending})</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
        <p className="muted small">
          Tab moves through the controls; the first stop skips straight to the message box. On a touch screen, a long
          press on a step opens its menu.
        </p>
        <h3>Step labels</h3>
        <LabelLegend />
        <div className="dialog-actions">
          <button type="button" ref={closeButton} data-testid="keys-close" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
