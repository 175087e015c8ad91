"use client";
import { useRouter } from "next/navigation";
import { useEffect, useState, type ReactNode } from "react";
import { ErrorBanner } from "@/components/error-banner";
import { messageOf } from "@/lib/api/client";
import {
  useMetrics,
  useParticipants,
  useStudies,
  useStudy,
  useStudyEvents,
  useStudyExport,
  useUpdateStudy,
} from "@/features/studies/hooks/use-studies";
import { featuresText, joinUrl } from "@/features/studies/lib/studies";
import type { Study } from "@/features/studies/lib/types";
import { ConditionFigures, ParticipantsTable } from "./participants-table";
import { StudyForm } from "./study-form";

function StudyShell({ title, children }: { title: string; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · HAICO studio`;
  }, [title]);
  return (
    <div className="study-shell">
      <header className="topbar">
        <span className="brand">HAICO</span>
        <a href="/" className="topbar-link" data-testid="back-to-studio">
          ← Conversations
        </a>
        <a href="/?studies" className="topbar-link" data-testid="studies-link">
          Studies
        </a>
      </header>
      {children}
    </div>
  );
}

/** `/?studies`: the studies the caller owns or is a member of, and a new one. */
export function StudiesPage() {
  const studies = useStudies();
  const router = useRouter();
  const [creating, setCreating] = useState(false);
  const none = studies.data !== undefined && studies.data.length === 0;
  return (
    <StudyShell title="Studies">
      <main className="study-page">
        <h1>Studies</h1>
        <p className="muted">
          One task, many participants, each in a condition of yours: every participant works in a family of their own,
          and you watch them all here.
        </p>
        {studies.error && <ErrorBanner message={messageOf(studies.error)} onDismiss={() => void studies.refetch()} />}
        {studies.data && studies.data.length > 0 && (
          <ul className="study-list">
            {studies.data.map((s) => (
              <li key={s.id} data-testid="study-item" data-study-id={s.id}>
                <a href={`/?study=${encodeURIComponent(s.id)}`}>{s.name}</a>
                <span className={`badge state-${s.state}`}>{s.state}</span>
                <span className="muted small">
                  {s.participants} participant{s.participants === 1 ? "" : "s"} · {s.conditions.length} condition
                  {s.conditions.length === 1 ? "" : "s"}
                </span>
              </li>
            ))}
          </ul>
        )}
        {creating || none ? (
          <StudyForm
            onCreated={(s) => router.push(`/?study=${encodeURIComponent(s.id)}`)}
            onCancel={none ? undefined : () => setCreating(false)}
          />
        ) : (
          <button type="button" className="primary" data-testid="study-new" onClick={() => setCreating(true)}>
            + New study
          </button>
        )}
      </main>
    </StudyShell>
  );
}

/** `/?study=<id>`: one study for its owner and members: the join link, the figures
 * per condition and the participants table (both live), the CSV, closing. */
export function StudyPage({ id }: { id: string }) {
  const study = useStudy(id);
  const [error, setError] = useState<string | null>(null);
  if (study.error) {
    return (
      <StudyShell title="Study">
        <main className="study-page">
          <h1>This study cannot be opened</h1>
          <p data-testid="load-error">{messageOf(study.error)}</p>
        </main>
      </StudyShell>
    );
  }
  if (!study.data) {
    return (
      <StudyShell title="Study">
        <div className="loading-screen">Loading the study…</div>
      </StudyShell>
    );
  }
  return (
    <StudyShell title={study.data.name}>
      <ErrorBanner message={error} onDismiss={() => setError(null)} />
      <StudyBody study={study.data} setError={setError} />
    </StudyShell>
  );
}

function StudyBody({ study, setError }: { study: Study; setError: (m: string | null) => void }) {
  const participants = useParticipants(study.id);
  const metrics = useMetrics(study.id);
  const { connected } = useStudyEvents(study.id);
  const update = useUpdateStudy(study.id);
  const download = useStudyExport();
  const [exporting, setExporting] = useState(false);
  const open = study.state === "open";
  const problem = participants.error ?? metrics.error;
  return (
    <main className="study-page" data-testid="study-page" data-study-id={study.id}>
      <div className="study-head">
        <div>
          <h1>
            {study.name} <span className={`badge state-${study.state}`}>{study.state}</span>
          </h1>
          {study.description && <p className="muted">{study.description}</p>}
        </div>
        <span className={`live ${connected ? "on" : ""}`} data-testid="study-live" role="status">
          {connected ? "● live" : "○ connecting…"}
        </span>
      </div>

      <section className="study-section" aria-labelledby="join-h">
        <h2 id="join-h">Join link</h2>
        {study.join_token ? (
          <JoinLink link={joinUrl(window.location.origin, study.join_token)} open={open} />
        ) : (
          <p className="muted">Only the study's owner sees its join link.</p>
        )}
        <div className="study-actions">
          <button
            type="button"
            data-testid="study-export"
            disabled={exporting}
            onClick={async () => {
              setExporting(true);
              try {
                await download(study);
              } catch (e) {
                setError(messageOf(e));
              } finally {
                setExporting(false);
              }
            }}
          >
            ⤓ Export CSV
          </button>
          {study.join_token && (
            <button
              type="button"
              className={open ? "danger" : ""}
              data-testid="study-close"
              disabled={update.isPending}
              onClick={() =>
                update.mutate({ state: open ? "closed" : "open" }, { onError: (e) => setError(messageOf(e)) })
              }
            >
              {open ? "Close the study" : "Open it again"}
            </button>
          )}
        </div>
      </section>

      <section className="study-section" aria-labelledby="coding-h">
        <h2 id="coding-h">
          Coding{" "}
          <span className={`badge ${study.reveal ? "" : "warn"}`} data-testid="study-coding-state">
            {study.reveal ? "revealed" : "blind"}
          </span>
        </h2>
        <p className="muted small">
          {study.reveal
            ? "Every coder sees every coding of the study's families, and the agreement."
            : "Blind: each coder sees only their own codings until the study's owner reveals them."}
        </p>
        {study.role === "owner" && (
          <button
            type="button"
            data-testid="study-reveal"
            className={study.reveal ? "" : "primary"}
            disabled={update.isPending}
            onClick={() => update.mutate({ reveal: !study.reveal }, { onError: (e) => setError(messageOf(e)) })}
          >
            {study.reveal ? "Make coding blind again" : "Reveal codings"}
          </button>
        )}
      </section>

      <section className="study-section" aria-labelledby="metrics-h">
        <h2 id="metrics-h">By condition</h2>
        <ul className="condition-legend">
          {study.conditions.map((c) => (
            <li key={c.id}>
              <strong>{c.name}</strong> <span className="muted">· {featuresText(c.features)}</span>
            </li>
          ))}
        </ul>
        {metrics.data && <ConditionFigures metrics={metrics.data.conditions} />}
      </section>

      <section className="study-section" aria-labelledby="people-h">
        <h2 id="people-h">
          Participants <span className="muted">({participants.data?.length ?? study.participants})</span>
        </h2>
        {problem && <p className="error-text">{messageOf(problem)}</p>}
        {participants.data && <ParticipantsTable rows={participants.data} />}
      </section>
    </main>
  );
}

function JoinLink({ link, open }: { link: string; open: boolean }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="join-link">
      <input
        readOnly
        data-testid="study-join-link"
        aria-label="The join link"
        value={link}
        onFocus={(e) => e.target.select()}
      />
      <button
        type="button"
        data-testid="study-copy-link"
        onClick={() => {
          void navigator.clipboard?.writeText(link).then(
            () => setCopied(true),
            () => setCopied(false),
          );
        }}
      >
        {copied ? "Copied" : "Copy"}
      </button>
      <span className="muted small">
        {open
          ? "Anyone with this link joins as the next participant, with no account."
          : "The study is closed: the link takes no one new."}
      </span>
    </div>
  );
}
