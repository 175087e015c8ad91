"use client";
import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { useJoin } from "@/features/studies/hooks/use-participant";

/** `/?join=st_…`: joins the study (once per browser), then opens the participant's
 * family; a refusal (a closed study, a link that is no longer valid) is said in words. */
export function JoinPage({ token, onDone }: { token: string; onDone: () => void }) {
  const state = useJoin(token);
  const router = useRouter();
  useEffect(() => {
    if (state.kind !== "joined") return;
    router.replace(`/?thread=${state.thread}`);
    onDone();
  }, [state, router, onDone]);
  if (state.kind === "failed") {
    return (
      <main className="consent-page">
        <div className="consent-card">
          <h1>You could not join this study</h1>
          <p className="error-banner" data-testid="error-banner" role="alert">
            {state.message}
          </p>
          <p className="muted">Ask the researcher who sent you the link.</p>
        </div>
      </main>
    );
  }
  return (
    <div className="loading-screen" role="status">
      Joining the study…
    </div>
  );
}
