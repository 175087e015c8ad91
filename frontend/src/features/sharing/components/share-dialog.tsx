"use client";
import { useState } from "react";
import { useShares, type Share } from "@/features/sharing/hooks/use-sharing";
import { EXPIRIES, expiryAt, shareUrl, type ShareRole } from "@/features/sharing/lib/share-link";
import { messageOf } from "@/lib/api/client";

/** The owner's "Share" button and its dialog: share with a user or make a review
 * link, with a role and an expiry; a new link is shown once, to copy; the shares
 * listed, each revocable. With auth off (`needsToken`) there is no one to share with:
 * the button is still there and its dialog says how to start the server in token mode. */
export function ShareButton({ root, needsToken = false }: { root: string; needsToken?: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        data-testid="share-button"
        title={needsToken ? "Sharing needs token mode: click to see how to turn it on" : "Share this family"}
        onClick={() => setOpen(true)}
      >
        Share
      </button>
      {open &&
        (needsToken ? (
          <NeedsTokenDialog onClose={() => setOpen(false)} />
        ) : (
          <ShareDialog root={root} onClose={() => setOpen(false)} />
        ))}
    </>
  );
}

/** Sharing under auth off: every request acts as the one local user, so nobody else
 * can be told apart to share with; how to restart in token mode. */
function NeedsTokenDialog({ onClose }: { onClose: () => void }) {
  return (
    <div className="overlay" role="presentation" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className="dialog share-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="share-title"
        data-testid="share-dialog"
        data-mode="needs-token"
        onKeyDown={(e) => e.key === "Escape" && onClose()}
      >
        <h2 id="share-title">Sharing needs token mode</h2>
        <div data-testid="share-needs-token">
          <p>
            This server runs with sign-in turned off: everyone who opens it acts as the same local user, so there is
            nobody to share with yet. In token mode each person signs in with a token of their own, and you can share a
            family with a user or as a review link.
          </p>
          <ol className="share-steps">
            <li>
              Stop the server and start it in token mode: <code>make run AUTH=token</code> (or{" "}
              <code>HAICO_AUTH=token haico serve</code>).
            </li>
            <li>
              Create a user for yourself and each colleague: <code>make user NAME=ada</code> (or{" "}
              <code>haico users create ada</code>) prints the token to sign in with.
            </li>
            <li>Sign in here with your token; the Share button then opens the sharing dialog.</li>
          </ol>
          <p className="muted small">
            Conversations made with sign-in off belong to the local user; <code>haico export</code> and{" "}
            <code>haico import --user NAME</code> move one to a user.
          </p>
        </div>
        <div className="dialog-actions">
          <button type="button" data-testid="share-close" autoFocus onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
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
  onRevoke: (id: string) => void;
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
