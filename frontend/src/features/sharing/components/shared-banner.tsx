"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import type { Sharing } from "@/features/sharing/hooks/use-sharing";
import { useContinueAsCopy } from "@/features/sharing/hooks/use-sharing";
import { roleText } from "@/features/sharing/lib/share-link";
import { messageOf } from "@/lib/api/client";

/** Above a family shared with the caller: whose it is and the caller's role (once the
 * server said it: a commenter's link is not announced as a viewer's meanwhile); above a
 * study participant's family opened from its study's page, that it is read for the study. */
export function SharedBanner({ sharing }: { sharing: Sharing }) {
  if (sharing.role === null || !sharing.known) return null;
  const whose = sharing.owner ? `${sharing.owner}'s family` : "A shared family";
  return (
    <div className="shared-banner" data-testid="shared-banner" role="status" data-role={sharing.role}>
      <strong>{whose}</strong>
      <span>
        {sharing.study ? (
          " · you read it for its study (read only)."
        ) : (
          <>
            · you are {roleText(sharing.role)}
            {sharing.viaLink ? " through a review link" : ""}.
          </>
        )}
      </span>
    </div>
  );
}

/** In place of the composer for a viewer or commenter: continue as a copy of one's own
 * (a fork of the shown path at its latest step). A review link owns nothing, so it
 * says how to get a copy instead. */
export function ReadOnlyComposer({
  sharing,
  thread,
  head,
}: {
  sharing: Sharing;
  /** the thread shown */
  thread: string;
  /** the family's head ("th_…:k"; null: no step yet): the copy starts from it */
  head: string | null;
}) {
  const at = head === null ? { thread, turn: 0 } : nodeParts(head);
  const router = useRouter();
  const copy = useContinueAsCopy();
  const [error, setError] = useState<string | null>(null);
  return (
    <div className="composer read-only-composer" data-testid="read-only-composer">
      <span className="muted">
        {sharing.role === "commenter"
          ? "You can read this family, add notes to its steps and code them."
          : "You can read this family."}
      </span>
      {sharing.viaLink ? (
        <span className="muted small">Sign in with your own token to continue as your own copy.</span>
      ) : (
        <button
          type="button"
          className="primary"
          data-testid="continue-as-copy"
          disabled={copy.isPending}
          onClick={() => {
            setError(null);
            copy.mutate(at, {
              onSuccess: (id) => router.push(`/?thread=${id}`),
              onError: (e) => setError(messageOf(e)),
            });
          }}
        >
          Continue as your own copy
        </button>
      )}
      {error && (
        <span className="error-text" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

function nodeParts(nodeId: string): { thread: string; turn: number } {
  const i = nodeId.lastIndexOf(":");
  return { thread: nodeId.slice(0, i), turn: Number(nodeId.slice(i + 1)) };
}
