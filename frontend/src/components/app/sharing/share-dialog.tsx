"use client";
import { useState } from "react";
import { useShares, type Share } from "@/hooks/use-sharing";
import { messageOf } from "@/hooks/use-studio-actions";
import { EXPIRIES, expiryAt, shareUrl, type ShareRole } from "@/lib/share-link";

/** The owner's "Share" button and its dialog: share with a user or make a review
 * link, with a role and an expiry; a new link is shown once, to copy; the shares
 * listed, each revocable. */
export function ShareButton({ root }: { root: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" data-testid="share-button" onClick={() => setOpen(true)}>
        Share
      </button>
      {open && <ShareDialog root={root} onClose={() => setOpen(false)} />}
    </>
  );
}

function ShareDialog({ root, onClose }: { root: string; onClose: () => void }) {
  const { list, create, revoke } = useShares(root, true);
  const [user, setUser] = useState("");
  const [role, setRole] = useState<ShareRole>("viewer");
  const [hours, setHours] = useState<number | null>(null);
  const [link, setLink] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const isLink = user.trim() === "";
  const submit = () => {
    setError(null);
    setLink(null);
    setCopied(false);
    create.mutate(
      { role, user: isLink ? null : user.trim(), expires_at: expiryAt(hours, Date.now()) },
      {
        onSuccess: (made) => {
          if (made.token) setLink(shareUrl(window.location.origin, root, made.token));
          setUser("");
        },
        onError: (e) => setError(messageOf(e)),
      },
    );
  };
  return (
    <div className="overlay" role="presentation" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className="dialog share-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="share-title"
        data-testid="share-dialog"
        onKeyDown={(e) => e.key === "Escape" && onClose()}
      >
        <h2 id="share-title">Share this family</h2>
        <p className="muted small">
          A share covers every path of the family. A viewer reads, a commenter also adds notes, an editor also sends and
          edits. Links are for viewers and commenters.
        </p>
        <form
          className="share-form"
          onSubmit={(e) => {
            e.preventDefault();
            submit();
          }}
        >
          <label>
            User
            <input
              data-testid="share-user"
              value={user}
              placeholder="a user name, or empty for a link"
              onChange={(e) => setUser(e.target.value)}
            />
          </label>
          <label>
            Role
            <select data-testid="share-role" value={role} onChange={(e) => setRole(e.target.value as ShareRole)}>
              <option value="viewer">Viewer</option>
              <option value="commenter">Commenter</option>
              <option value="editor" disabled={isLink}>
                Editor{isLink ? " (users only)" : ""}
              </option>
            </select>
          </label>
          <label>
            Expires
            <select
              data-testid="share-expiry"
              value={hours === null ? "" : String(hours)}
              onChange={(e) => setHours(e.target.value === "" ? null : Number(e.target.value))}
            >
              {EXPIRIES.map((x) => (
                <option key={x.label} value={x.hours === null ? "" : String(x.hours)}>
                  {x.label}
                </option>
              ))}
            </select>
          </label>
          <button
            type="submit"
            className="primary"
            data-testid="share-create"
            disabled={create.isPending || (isLink && role === "editor")}
          >
            {isLink ? "Make a link" : "Share"}
          </button>
        </form>
        {link && (
          <div className="share-made" role="status">
            <span className="small">Copy the link now: it is shown only once.</span>
            <input data-testid="share-link" readOnly value={link} onFocus={(e) => e.target.select()} />
            <button
              type="button"
              data-testid="share-copy"
              onClick={() => void navigator.clipboard?.writeText(link).then(() => setCopied(true))}
            >
              {copied ? "Copied" : "Copy"}
            </button>
          </div>
        )}
        {error && (
          <p className="error-text" role="alert">
            {error}
          </p>
        )}
        <h3>Shared with</h3>
        <ShareList
          shares={list.data}
          loading={list.isLoading}
          onRevoke={(id) => revoke.mutate(id, { onError: (e) => setError(messageOf(e)) })}
        />
        <div className="dialog-actions">
          <button type="button" data-testid="share-close" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}

function ShareList({
  shares,
  loading,
  onRevoke,
}: {
  shares: readonly Share[] | undefined;
  loading: boolean;
  onRevoke: (id: number) => void;
}) {
  if (loading) return <p className="muted small">Loading…</p>;
  if (!shares || shares.length === 0) return <p className="muted small">Nobody yet.</p>;
  return (
    <ul className="share-list">
      {shares.map((s) => (
        <li key={s.id} data-testid="share-item" data-share-id={s.id} data-revoked={String(s.revoked)}>
          <span>{s.user ?? "Link"}</span>
          <span className="muted">{s.role}</span>
          <span className="muted small">
            {s.revoked
              ? "revoked"
              : s.expires_at
                ? `until ${new Date(s.expires_at).toLocaleDateString()}`
                : "no expiry"}
          </span>
          {!s.revoked && (
            <button type="button" className="danger" data-testid="share-revoke" onClick={() => onRevoke(s.id)}>
              Revoke
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}
