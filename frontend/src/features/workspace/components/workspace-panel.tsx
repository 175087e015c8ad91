"use client";
import { useQueryClient } from "@tanstack/react-query";
import { memo, useEffect, useRef, useState } from "react";
import { useApi } from "@/hooks/use-api";
import type { FirstWrite } from "@/features/conversations/hooks/use-new-conversation";
import { useArtifact } from "@/hooks/use-studio-data";
import { every, keys } from "@/lib/query-keys";
import { AddItem, ItemRow } from "./item-row";
import { unwrap, type Workspace } from "@/lib/api/client";

type ItemList = "preferences" | "todos";
/** A preference takes `locked`, a todo `done` and `depth`; both take `position`. */
type ItemPatch = { locked?: boolean; done?: boolean; depth?: number; position?: number };

export interface WorkspacePanelProps {
  thread: string;
  workspace: Workspace | undefined;
  loading: boolean;
  restoredAt: string | null;
  onError: (error: unknown) => void;
  /** runs every write: a conversation not created yet is created by its first edit,
   * with it (`create`, useNewConversation) */
  write?: FirstWrite;
}

function LockIcon({ locked }: { locked: boolean }) {
  return (
    <svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true" className={locked ? "lock on" : "lock"}>
      <rect x="3" y="7" width="10" height="8" rx="1.5" fill="currentColor" />
      <path
        d={locked ? "M5 7V5a3 3 0 0 1 6 0v2" : "M5 7V5a3 3 0 0 1 6 0"}
        fill="none"
        stroke="currentColor"
        strokeWidth="1.6"
        transform={locked ? undefined : "translate(3 -1.5)"}
      />
    </svg>
  );
}

/** A text field that follows the server's value except while the user is editing it,
 * or while an edit of theirs is unsaved (its save failed): that one is kept, marked,
 * until a save succeeds or the server comes to hold the same text. */
function useSynced(server: string) {
  const [value, setValue] = useState(server);
  const [unsaved, setUnsaved] = useState(false);
  const editing = useRef(false);
  useEffect(() => {
    if (value === server) setUnsaved(false);
    else if (!editing.current && !unsaved) setValue(server);
  }, [server, value, unsaved]);
  return {
    value,
    setValue,
    focus: { onFocus: () => (editing.current = true), onBlur: () => (editing.current = false) },
    dirty: value !== server,
    unsaved,
    /** after a save: a failed one keeps the edit, marked unsaved */
    saved: (ok: boolean) => setUnsaved(!ok),
  };
}

/** The mark on a field whose edit could not be saved. */
function Unsaved({ field }: { field: string }) {
  return (
    <span
      className="badge warn"
      data-testid={`${field}-unsaved`}
      title="The server did not take this edit; it is kept here"
    >
      not saved · Enter or leave the field to retry
    </span>
  );
}

function ArtifactItem({ thread, id, title, turn }: { thread: string; id: number; title: string; turn: number }) {
  const [open, setOpen] = useState(false);
  const artifact = useArtifact(thread, open ? id : null);
  return (
    <li data-testid="artifact-item" className="artifact">
      <button type="button" className="link" onClick={() => setOpen(!open)} aria-expanded={open}>
        {open ? "▾" : "▸"} {title} <span className="muted">· step {turn}</span>
      </button>
      {open && (
        <pre className="artifact-content" data-testid="artifact-content">
          {artifact.isLoading ? "Loading…" : artifact.error ? "Could not load this artifact." : artifact.data?.content}
        </pre>
      )}
    </li>
  );
}

/** The workspace column: objective, document, preferences, todos, artifacts. */
function WorkspacePanelView({ thread, workspace, loading, restoredAt, onError, write }: WorkspacePanelProps) {
  const { client } = useApi();
  const qc = useQueryClient();
  // An edit's address; a first edit's creates the conversation too (`?create=true`).
  const at = (create: boolean) => ({ params: { path: { thread_id: thread }, query: create ? { create } : {} } });
  const objective = useSynced(workspace?.objective ?? "");
  const title = useSynced(workspace?.document?.title ?? "");
  const content = useSynced(workspace?.document?.content ?? "");

  const setWorkspace = (w: Workspace) => qc.setQueryData(keys.workspace(thread), w);
  const refetch = () => qc.invalidateQueries({ queryKey: keys.workspace(thread) });
  /** Runs an edit (`create`: it creates the conversation too); on failure shows why,
   * rereads the workspace, resolves to false. */
  const run = async (fn: (create: boolean) => Promise<unknown>): Promise<boolean> => {
    try {
      await (write ? write(fn) : fn(false));
      return true;
    } catch (e) {
      onError(e);
      await refetch();
      return false;
    }
  };

  const saveObjective = async () => {
    if (!objective.dirty) return;
    const text = objective.value;
    objective.saved(
      await run(async (create) => {
        const body = { text: text || null };
        setWorkspace(unwrap(await client.PUT("/api/conversations/{thread_id}/objective", { ...at(create), body })));
        // a conversation still titled "New conversation" is named after its objective
        await qc.invalidateQueries({ queryKey: every.conversations });
      }),
    );
  };
  const saveDocument = async () => {
    if (!title.dirty && !content.dirty) return;
    const body = { title: title.value || null, content: content.value };
    const ok = await run(async (create) =>
      setWorkspace(unwrap(await client.PUT("/api/conversations/{thread_id}/document", { ...at(create), body }))),
    );
    title.saved(ok);
    content.saved(ok);
  };

  const prefs = workspace?.preferences ?? [];
  const todos = workspace?.todos ?? [];
  // The preferences' and todos' writes: each rereads the workspace after it.
  const items = {
    patch: (list: ItemList, id: number | null, body: ItemPatch) =>
      id !== null &&
      run(async () => {
        if (list === "preferences") {
          const path = { thread_id: thread, pref_id: id };
          unwrap(
            await client.PATCH("/api/conversations/{thread_id}/preferences/{pref_id}", { params: { path }, body }),
          );
        } else {
          const path = { thread_id: thread, todo_id: id };
          unwrap(await client.PATCH("/api/conversations/{thread_id}/todos/{todo_id}", { params: { path }, body }));
        }
        await refetch();
      }),
    remove: (list: ItemList, id: number | null) =>
      id !== null &&
      run(async () => {
        if (list === "preferences") {
          const path = { thread_id: thread, pref_id: id };
          unwrap(await client.DELETE("/api/conversations/{thread_id}/preferences/{pref_id}", { params: { path } }));
        } else {
          const path = { thread_id: thread, todo_id: id };
          unwrap(await client.DELETE("/api/conversations/{thread_id}/todos/{todo_id}", { params: { path } }));
        }
        await refetch();
      }),
    addPreference: (text: string) =>
      run(async (create) => {
        const body = { text, locked: false };
        unwrap(await client.POST("/api/conversations/{thread_id}/preferences", { ...at(create), body }));
        await refetch();
      }),
    addTodo: (text: string) =>
      run(async (create) => {
        const body = { text, done: false, depth: 0 };
        unwrap(await client.POST("/api/conversations/{thread_id}/todos", { ...at(create), body }));
        await refetch();
      }),
  };

  if (loading && !workspace)
    return (
      <aside className="workspace">
        <div className="empty">Loading the workspace…</div>
      </aside>
    );

  return (
    <aside className="workspace" aria-label="Workspace">
      {restoredAt && (
        <div className="preview-banner" data-testid="preview-banner">
          Workspace as it stood after step {restoredAt} (editable preview)
        </div>
      )}
      <section>
        <h2>Objective {objective.unsaved && <Unsaved field="objective" />}</h2>
        {/* several lines, as tall as its text (no text cut); Enter still saves it */}
        <textarea
          data-testid="workspace-objective"
          className="objective"
          aria-label="Objective"
          placeholder="What are we building?"
          rows={2}
          value={objective.value}
          onChange={(e) => objective.setValue(e.target.value)}
          {...objective.focus}
          onBlur={() => {
            objective.focus.onBlur();
            void saveObjective();
          }}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              e.currentTarget.blur();
            }
          }}
        />
      </section>
      <section className="doc">
        <h2>Document {(title.unsaved || content.unsaved) && <Unsaved field="document" />}</h2>
        <input
          className="doc-title"
          data-testid="workspace-document-title"
          placeholder="Title"
          value={title.value}
          onChange={(e) => title.setValue(e.target.value)}
          {...title.focus}
          onBlur={() => {
            title.focus.onBlur();
            void saveDocument();
          }}
        />
        <textarea
          data-testid="workspace-document"
          placeholder="The document the agent and you write together"
          value={content.value}
          onChange={(e) => content.setValue(e.target.value)}
          {...content.focus}
          onBlur={() => {
            content.focus.onBlur();
            void saveDocument();
          }}
        />
      </section>
      <section>
        <h2>
          Preferences <span className="muted">({prefs.length})</span>
        </h2>
        <ul className="items">
          {prefs.map((p, i) => (
            <ItemRow
              key={p.uid}
              kind="preference"
              uid={p.uid}
              text={p.text}
              index={i}
              count={prefs.length}
              state={{ "data-locked": p.locked ? "true" : "false" }}
              className={p.locked ? "locked" : ""}
              lead={
                <button
                  type="button"
                  className="icon"
                  data-testid="preference-lock"
                  title={
                    p.locked ? "Locked: a binding constraint. Click to unlock" : "Lock: make it binding for the agent"
                  }
                  aria-pressed={p.locked}
                  onClick={() => void items.patch("preferences", p.id, { locked: !p.locked })}
                >
                  <LockIcon locked={p.locked} />
                </button>
              }
              onMove={(position) => void items.patch("preferences", p.id, { position })}
              onRemove={() => void items.remove("preferences", p.id)}
            />
          ))}
        </ul>
        <AddItem testId="preference-new" placeholder="Add a preference" onAdd={items.addPreference} />
      </section>
      <section>
        <h2>
          Todos{" "}
          <span className="muted">
            ({todos.filter((t) => t.done).length}/{todos.length} done)
          </span>
        </h2>
        <ul className="items">
          {todos.map((t, i) => (
            <ItemRow
              key={t.uid}
              kind="todo"
              uid={t.uid}
              text={t.text}
              index={i}
              count={todos.length}
              state={{ "data-done": t.done ? "true" : "false" }}
              className={t.done ? "done" : ""}
              style={{ paddingLeft: 4 + t.depth * 18 }}
              lead={
                <input
                  type="checkbox"
                  checked={t.done}
                  title="Done"
                  aria-label={`Done: ${t.text}`}
                  data-testid="todo-done"
                  onChange={() => void items.patch("todos", t.id, { done: !t.done })}
                />
              }
              extra={
                <>
                  <button
                    type="button"
                    className="icon"
                    title="Outdent"
                    disabled={t.depth === 0}
                    onClick={() => void items.patch("todos", t.id, { depth: t.depth - 1 })}
                  >
                    ⇤
                  </button>
                  <button
                    type="button"
                    className="icon"
                    title="Indent under the todo above"
                    disabled={i === 0 || t.depth >= 8}
                    onClick={() => void items.patch("todos", t.id, { depth: t.depth + 1 })}
                  >
                    ⇥
                  </button>
                </>
              }
              onMove={(position) => void items.patch("todos", t.id, { position })}
              onRemove={() => void items.remove("todos", t.id)}
            />
          ))}
        </ul>
        <AddItem testId="todo-new" placeholder="Add a todo" onAdd={items.addTodo} />
      </section>
      {(workspace?.rejected.length ?? 0) > 0 && (
        <section>
          <details className="rejected" data-testid="rejected-list">
            <summary>
              <h2>
                Rejected decisions <span className="muted">({workspace?.rejected.length})</span>
              </h2>
            </summary>
            <ul className="items">
              {workspace?.rejected.map((r) => (
                <li key={`${r.surface}:${r.uid}`} data-testid="rejected-item" data-uid={r.uid} data-surface={r.surface}>
                  <span className="item-text">
                    <s>{r.text}</s>{" "}
                    <span className="muted small">
                      · {r.surface} · after step {r.rejected_after_turn}
                    </span>
                  </span>
                </li>
              ))}
            </ul>
          </details>
        </section>
      )}
      <section>
        <h2>
          Artifacts <span className="muted">({workspace?.artifacts.length ?? 0})</span>
        </h2>
        {workspace && workspace.artifacts.length === 0 && (
          <p className="muted small">
            None yet. Ask for one: <code>artifact TITLE: CONTENT</code>
          </p>
        )}
        <ul className="items">
          {workspace?.artifacts.map((a) => (
            <ArtifactItem key={a.id} thread={thread} id={a.id} title={a.title} turn={a.turn_index} />
          ))}
        </ul>
      </section>
    </aside>
  );
}

/** The workspace panel, memoised: the page renders with every streamed token and every
 * graph change, and a long todo list is some hundreds of inputs. */
export const WorkspacePanel = memo(WorkspacePanelView);
