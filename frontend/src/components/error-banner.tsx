"use client";

/** The page's last error, until dismissed (or cleared when the cause is gone). */
export function ErrorBanner({ message, onDismiss }: { message: string | null; onDismiss: () => void }) {
  if (!message) return null;
  return (
    <div className="error-banner" data-testid="error-banner" role="alert">
      <span>{message}</span>
      <button type="button" className="icon" aria-label="Dismiss" onClick={onDismiss}>
        ✕
      </button>
    </div>
  );
}
