"use client";
import { useState } from "react";
import { messageOf } from "@/lib/api/client";
import { useParticipant } from "@/features/studies/hooks/use-participant";
import type { Me } from "@/features/studies/lib/types";

/** The participant's top bar: the study's name, their pseudonym, and Finish (asked once
 * more before it ends the session), or, once finished, that the session has ended. */
export function ParticipantHeader({ me, onError }: { me: Me; onError: (message: string) => void }) {
  const { finish } = useParticipant();
  const [asking, setAsking] = useState(false);
  const finished = me.state === "finished";
  return (
    <header className="topbar participant-bar" data-testid="participant-bar">
      <span className="brand">HAICO</span>
      <span className="study-name" title="The study you take part in">
        {me.study.name}
      </span>
      <span className="badge" data-testid="participant-id" title="Your pseudonym in this study">
        {me.participant}
      </span>
      <span className="spacer" />
      {finished ? (
        <span className="finished-note" data-testid="finished-note" role="status">
          Finished: your session is read-only. Thank you!
        </span>
      ) : asking ? (
        <span className="finish-confirm" role="group" aria-label="Finish the session">
          <span>End your session? You cannot change anything afterwards.</span>
          <button
            type="button"
            className="primary"
            data-testid="finish-confirm"
            disabled={finish.isPending}
            onClick={() =>
              finish.mutate(undefined, {
                onSuccess: () => setAsking(false),
                onError: (e) => onError(messageOf(e)),
              })
            }
          >
            Yes, finish
          </button>
          <button type="button" data-testid="finish-cancel" onClick={() => setAsking(false)}>
            Keep working
          </button>
        </span>
      ) : (
        <button type="button" className="primary" data-testid="finish-button" onClick={() => setAsking(true)}>
          Finish
        </button>
      )}
    </header>
  );
}

/** In place of the composer once the participant has finished. */
export function FinishedComposer() {
  return (
    <div className="composer read-only-composer" data-testid="finished-composer">
      <span className="muted">You have finished this session: you can read it, and change nothing more.</span>
    </div>
  );
}

/** Before the first turn, when the study asks for consent: its text and "I agree". */
export function ConsentPage({ me }: { me: Me }) {
  const { consent } = useParticipant();
  return (
    <main className="consent-page" data-testid="consent-page">
      <div className="consent-card">
        <p className="muted small">
          {me.study.name} · you take part as <strong>{me.participant}</strong>
        </p>
        <h1>Before you start</h1>
        <div className="consent-text" data-testid="consent-text">
          {me.study.consent}
        </div>
        {consent.error && (
          <p className="error-text" role="alert" data-testid="error-banner">
            {messageOf(consent.error)}
          </p>
        )}
        <button
          type="button"
          className="primary big"
          data-testid="consent-accept"
          disabled={consent.isPending}
          onClick={() => consent.mutate()}
        >
          I agree, start
        </button>
      </div>
    </main>
  );
}
