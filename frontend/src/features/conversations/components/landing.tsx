"use client";
import type { Conversation } from "@/lib/api/client";
import { familySteps, stepsText } from "@/lib/where";

/** The page without a conversation: start one, or open a recent one. */
export function Landing(props: {
  conversations: Conversation[] | undefined;
  loading: boolean;
  onOpen: (c: Conversation) => void;
  onNew: () => void;
}) {
  const roots = (props.conversations ?? [])
    .filter((c) => c.parent_thread_id === null)
    .sort((a, b) => b.updated_at.localeCompare(a.updated_at));
  return (
    <div className="landing">
      <h1>Co-construction studio</h1>
      <p className="muted">
        You and the agent build a workspace together. Every message is a step you can return to; continuing from an
        earlier step opens a new path, and no path is ever lost.
      </p>
      <button type="button" className="primary big" onClick={props.onNew}>
        Start a new conversation
      </button>
      <h2>Recent conversations</h2>
      {props.loading ? (
        <p className="muted">Loading…</p>
      ) : roots.length === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <ul className="landing-list">
          {roots.map((c) => (
            <li key={c.thread_id}>
              <button type="button" className="link" onClick={() => props.onOpen(c)}>
                {c.title}
              </button>
              <span className="muted">
                {" "}
                · {stepsText(familySteps(props.conversations ?? [], c))} · {new Date(c.updated_at).toLocaleString()}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
