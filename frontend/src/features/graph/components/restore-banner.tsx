"use client";

/** Shown while a restored step is on screen: what it is, that it survives a reload,
 * and the way back to the step you left (also Escape). */
export function RestoreBanner({
  label,
  backLabel,
  onBack,
}: {
  label: string;
  /** the label of the step "back" returns to (null: unknown) */
  backLabel: string | null;
  onBack: () => void;
}) {
  return (
    <div className="restore-banner" data-testid="restore-banner" role="status">
      <span>
        <strong>Restored step {label}</strong> · an editable preview; sending continues from here on a new path. It
        stays restored if you reload.
      </span>
      <button type="button" className="primary" data-testid="restore-back" onClick={onBack}>
        ↩ Back to where you were{backLabel ? ` (step ${backLabel})` : ""}
      </button>
      <span className="muted small key-hint">Esc</span>
    </div>
  );
}
