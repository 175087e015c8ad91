"use client";
import { useRouter, useSearchParams } from "next/navigation";
import { useEffect, type ReactNode } from "react";
import { messageOf } from "@/lib/api/client";
import { FeaturesContext, ParticipantContext } from "@/features/studies/hooks/use-features";
import { useParticipant } from "@/features/studies/hooks/use-participant";
import { participantFeatures } from "@/features/studies/lib/participant";
import { ConsentPage } from "./participant-bar";

/** The studio for a tab that acts as a study's participant: their family (the address
 * is set to it when it names none), the consent first when the study asks for it,
 * then the studio with only what the condition allows. Any other tab passes through. */
export function ParticipantGate({ children }: { children: ReactNode }) {
  const { active, me, loading, error } = useParticipant();
  const params = useSearchParams();
  const router = useRouter();
  const thread = params.get("thread");
  useEffect(() => {
    if (me !== null && thread === null) router.replace(`/?thread=${me.thread_id}`);
  }, [me, thread, router]);
  if (!active) return children;
  if (loading) return <div className="loading-screen">Loading your study…</div>;
  if (me === null) {
    return (
      <main className="consent-page">
        <div className="consent-card">
          <h1>Your study session cannot be opened</h1>
          <p className="error-banner" data-testid="error-banner" role="alert">
            {messageOf(error)}
          </p>
        </div>
      </main>
    );
  }
  if (me.state === "joined" && me.study.consent) return <ConsentPage me={me} />;
  if (thread === null) return <div className="loading-screen">Loading your study…</div>;
  return (
    <ParticipantContext.Provider value={me}>
      <FeaturesContext.Provider value={participantFeatures(me.condition?.features)}>
        {children}
      </FeaturesContext.Provider>
    </ParticipantContext.Provider>
  );
}
