"use client";
import { useEffect, useState } from "react";
import {
  STATE_TEXT,
  agoText,
  durationText,
  figureText,
  inJoinOrder,
  participantFamilyUrl,
} from "@/features/studies/lib/studies";
import type { ConditionMetrics, ParticipantRow } from "@/features/studies/lib/types";

const COUNTS = ["turns", "branches", "restores", "merges", "alternatives"] as const;

/** "12 s ago" stays true: the table's times are read again every few seconds. */
function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** One row per participant, in join order: their condition, state, counts and last
 * activity; each opens the participant's family (read-only for the researcher). */
export function ParticipantsTable({ rows }: { rows: readonly ParticipantRow[] }) {
  const now = useNow(10_000);
  if (rows.length === 0) {
    return (
      <p className="empty" data-testid="participants-empty">
        No one has joined yet. Send the join link to your participants: each gets a family of their own.
      </p>
    );
  }
  return (
    <div className="table-scroll">
      <table className="participants" data-testid="participants-table">
        <thead>
          <tr>
            <th scope="col">Participant</th>
            <th scope="col">Condition</th>
            <th scope="col">State</th>
            {COUNTS.map((c) => (
              <th scope="col" key={c} className="num">
                {c[0]?.toUpperCase() + c.slice(1)}
              </th>
            ))}
            <th scope="col">Last active</th>
            <th scope="col">
              <span className="sr-only">Open</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {inJoinOrder(rows).map((r) => (
            <tr
              key={r.participant}
              data-testid="participant-row"
              data-participant={r.participant}
              data-condition={r.condition}
              data-state={r.state}
            >
              <th scope="row">{r.participant}</th>
              <td>{r.condition}</td>
              <td>
                <span className={`badge state-${r.state}`}>{STATE_TEXT[r.state] ?? r.state}</span>
              </td>
              {COUNTS.map((c) => (
                <td key={c} className="num" data-count={c}>
                  {r[c]}
                </td>
              ))}
              <td title={r.last_active_at ?? undefined}>{agoText(r.last_active_at ?? r.joined_at, now)}</td>
              <td>
                <a
                  href={participantFamilyUrl(r.thread_id)}
                  target="_blank"
                  rel="noopener"
                  data-testid="participant-open"
                  aria-label={`Open ${r.participant}'s family (read-only)`}
                >
                  Open ↗
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The figures of each condition: participants (finished), then each count's mean and
 * median over its participants, time on task and tokens. */
export function ConditionFigures({ metrics }: { metrics: readonly ConditionMetrics[] }) {
  return (
    <div className="condition-grid">
      {metrics.map((m) => (
        <section
          key={m.condition}
          className="condition-card"
          data-testid="condition-metrics"
          data-condition={m.condition}
          aria-label={`Condition ${m.condition}`}
        >
          <h3>{m.condition}</h3>
          <p className="condition-people">
            <strong data-testid="condition-participants">{m.participants}</strong> participant
            {m.participants === 1 ? "" : "s"} · {m.finished} finished
          </p>
          <dl>
            {COUNTS.map((c) => (
              <div key={c} data-figure={c}>
                <dt>{c}</dt>
                <dd>{figureText(m[c])}</dd>
              </div>
            ))}
            <div data-figure="time_on_task_s">
              <dt>time on task</dt>
              <dd>
                {durationText(m.time_on_task_s?.mean)} / {durationText(m.time_on_task_s?.median)}
              </dd>
            </div>
            <div data-figure="input_tokens">
              <dt>tokens in</dt>
              <dd>{figureText(m.input_tokens)}</dd>
            </div>
            <div data-figure="output_tokens">
              <dt>tokens out</dt>
              <dd>{figureText(m.output_tokens)}</dd>
            </div>
          </dl>
          <p className="muted small">mean / median per participant</p>
        </section>
      ))}
    </div>
  );
}
