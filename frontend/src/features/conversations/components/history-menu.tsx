"use client";
import { useCallback, useMemo, useRef, useState } from "react";
import { DatasetExports } from "@/features/coding/components/dataset-exports";
import { useClickOutside } from "@/hooks/use-click-outside";
import type { Conversation, Schemas } from "@/lib/api/client";
import { filterConversations } from "@/features/graph/lib/big-trees";
import { familySteps, stepsText } from "@/lib/where";
import type { Dataset } from "@/features/coding/lib/exports";
import type { ExportFormat } from "@/lib/research";

const IMPORT_HINT =
  "Import a conversation exported from HAICO (a .json file): it becomes a new conversation with the same graph";

type SharedConversation = Schemas["SharedConversationOut"];

export interface HistoryMenuProps {
  conversations: Conversation[] | undefined;
  /** the threads of the families shared with the caller, each with its role and owner */
  shared?: readonly SharedConversation[];
  loading: boolean;
  currentThread: string | null;
  currentRoot: string | null;
  onOpen: (c: Conversation) => void;
  onNew: () => void;
  /** the caller may own conversations (a share link owns nothing: no new, no import) */
  owns?: boolean;
  /** resolves to whether the title was saved */
  onRename: (c: Conversation, title: string) => Promise<boolean>;
  onDelete: (c: Conversation) => void;
  /** download the family of `c`: one JSON document (to import), or the analysis CSV */
  onExport: (c: Conversation, format: ExportFormat | Dataset) => void;
  /** upload an exported family: it becomes a new family of the caller */
  onImport: (file: File) => void;
  /** an import is being uploaded */
  importing: boolean;
  /** archive a branch (and what lies below it); it leaves this list */
  onArchive: (c: Conversation) => void;
  /** node id → step label, for the family on screen (a branch's row shows its first step's) */
  labels?: ReadonlyMap<string, string>;
  /** the caller may run studies (token mode, signed in as a user): the menu links to them */
  studies?: boolean;
}

interface Entry<T extends Conversation = Conversation> {
  c: T;
  depth: number;
}

/** Roots newest first, each followed by its branches nested under their parents. */
function tree<T extends Conversation>(conversations: readonly T[]): Entry<T>[] {
  const ids = new Set(conversations.map((c) => c.thread_id));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const c of conversations) {
    if (c.parent_thread_id && ids.has(c.parent_thread_id)) {
      const list = children.get(c.parent_thread_id) ?? [];
      list.push(c);
      children.set(c.parent_thread_id, list);
    } else roots.push(c);
  }
  roots.sort((a, b) => b.updated_at.localeCompare(a.updated_at));
  const out: Entry<T>[] = [];
  const walk = (c: T, depth: number, seen: Set<string>) => {
    if (seen.has(c.thread_id)) return;
    seen.add(c.thread_id);
    out.push({ c, depth });
    const kids = (children.get(c.thread_id) ?? []).sort((a, b) => a.created_at.localeCompare(b.created_at));
    for (const k of kids) walk(k, depth + 1, seen);
  };
  const seen = new Set<string>();
  for (const r of roots) walk(r, 0, seen);
  return out;
}

/** The menu's rows: the tree, or filtered, the rows that match, each on its own (a
 * branch has no nesting to read it by). */
function listed<T extends Conversation>(conversations: readonly T[], filter: string): Entry<T>[] {
  const all = tree(conversations);
  if (!filter.trim()) return all;
  const matching = new Set(filterConversations(conversations, filter));
  return all.filter((e) => matching.has(e.c)).map((e) => ({ c: e.c, depth: 0 }));
}

/** The history menu: every conversation, branches nested ("branched at step N"),
 * forks marked; new, rename and delete. The families shared with the caller follow in
 * a group of their own, each with its owner and the caller's role: they open and
 * export, and are renamed, archived or deleted only by their owner's own menu. */
export function HistoryMenu(props: HistoryMenuProps) {
  const [open, setOpen] = useState(false);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [filter, setFilter] = useState("");
  const ref = useRef<HTMLDivElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);

  const close = useCallback(() => setOpen(false), []);
  // a branch's first own step, as the graph labels it (known for the family on screen)
  const firstLabel = (c: Conversation): string | null =>
    props.labels?.get(`${c.thread_id}:${(c.branch_point_turn ?? 0) + 1}`) ?? null;
  const exportOne = (c: Conversation, format: ExportFormat | Dataset) => {
    setOpen(false);
    props.onExport(c, format);
  };
  useClickOutside(ref, open, close);

  // (memoised: the page renders the menu with every streamed token, and a big family
  // lists some hundreds of conversations)
  const entries = useMemo(() => listed(props.conversations ?? [], filter), [props.conversations, filter]);
  const shared = useMemo(() => listed(props.shared ?? [], filter), [props.shared, filter]);
  return (
    <div className="history-menu" ref={ref}>
      <button type="button" data-testid="history-menu-button" aria-expanded={open} onClick={() => setOpen(!open)}>
        ☰ Conversations
      </button>
      {open && (
        <div className="menu" role="dialog" aria-label="Conversations" data-testid="history-menu">
          {props.owns !== false && (
            <>
              <button
                type="button"
                className="menu-new"
                onClick={() => {
                  setOpen(false);
                  props.onNew();
                }}
              >
                + New conversation
              </button>
              <button
                type="button"
                className="menu-new"
                data-testid="import-button"
                disabled={props.importing}
                title={IMPORT_HINT}
                onClick={() => fileInput.current?.click()}
              >
                ⤒ Import a conversation…
              </button>
            </>
          )}
          {props.studies && (
            <a className="menu-new" href="/?studies" data-testid="studies-link">
              ▦ Studies: participants under conditions…
            </a>
          )}
          <input
            ref={fileInput}
            type="file"
            accept=".json,application/json"
            data-testid="import-input"
            hidden
            onChange={(e) => {
              const file = e.target.files?.[0];
              e.target.value = "";
              if (file) {
                setOpen(false);
                props.onImport(file);
              }
            }}
          />
          <input
            className="menu-filter"
            data-testid="conversation-filter"
            type="search"
            placeholder="Filter by title, name or summary"
            aria-label="Filter the conversations"
            value={filter}
            onChange={(e) => setFilter(e.target.value)}
          />
          {props.loading && <div className="muted pad">Loading…</div>}
          {!props.loading && entries.length === 0 && <div className="muted pad">No conversations yet.</div>}
          <ul>
            {entries.map(({ c, depth }) => {
              const current = c.thread_id === props.currentThread;
              return (
                <li
                  key={c.thread_id}
                  style={{ paddingLeft: 8 + depth * 18 }}
                  className={`${current ? "current" : ""} ${c.root_thread_id === props.currentRoot ? "family" : ""}`}
                >
                  {renaming === c.thread_id ? (
                    <form
                      className="rename"
                      onSubmit={(e) => {
                        e.preventDefault();
                        const title = name.trim();
                        setRenaming(null);
                        // A title the server did not take comes back in the editor.
                        if (title)
                          void props.onRename(c, title).then((saved) => {
                            if (!saved) {
                              setName(title);
                              setRenaming(c.thread_id);
                            }
                          });
                      }}
                    >
                      <input
                        data-testid="rename-input"
                        aria-label="New title"
                        autoFocus
                        value={name}
                        onChange={(e) => setName(e.target.value)}
                        onBlur={() => setRenaming(null)}
                      />
                    </form>
                  ) : (
                    <button
                      type="button"
                      className="item"
                      data-testid="conversation-item"
                      data-thread-id={c.thread_id}
                      onClick={() => {
                        setOpen(false);
                        props.onOpen(c);
                      }}
                    >
                      <span className="title">
                        {depth > 0 && "↳ "}
                        {/* what tells branches apart comes first: the label of the branch's
                            first step, its name, the reason given when it was made */}
                        {c.parent_thread_id !== null && firstLabel(c) !== null && (
                          <span className="branch-label" data-testid="conversation-label">
                            {firstLabel(c)}
                          </span>
                        )}
                        {c.name && (
                          <span className="name-tag" data-testid="conversation-name">
                            ⎇ {c.name}
                          </span>
                        )}
                        {c.parent_thread_id !== null && c.reason && (
                          <span className="branch-reason" data-testid="conversation-reason">
                            “{c.reason}”
                          </span>
                        )}
                        {/* a branch by its summary (its name is the tag above); a family by its title */}
                        {c.summary && c.parent_thread_id !== null ? (
                          <span
                            className="summary"
                            data-testid="branch-summary"
                            data-thread-id={c.thread_id}
                            title={c.title}
                          >
                            {c.summary}
                          </span>
                        ) : (
                          c.title
                        )}
                      </span>
                      <span className="sub muted">
                        {c.parent_thread_id !== null && c.branch_point_turn !== null
                          ? `branched at step ${c.branch_point_turn}`
                          : c.forked_from
                            ? `fork · from step ${c.forked_from.turn_index}`
                            : stepsText(familySteps(props.conversations ?? [], c))}
                        {c.forked_from && c.parent_thread_id !== null && " · fork"}
                      </span>
                      {c.forked_from && <span className="badge">fork</span>}
                    </button>
                  )}
                  <span className="item-actions">
                    {c.parent_thread_id === null && <ExportButton c={c} onExport={exportOne} />}
                    {c.parent_thread_id !== null && (
                      <button
                        type="button"
                        className="icon"
                        title="Archive this branch (and the branches below it): hidden, nothing deleted"
                        aria-label={`Archive ${c.name ?? c.summary ?? c.title}`}
                        data-testid="archive-button"
                        data-thread-id={c.thread_id}
                        onClick={() => props.onArchive(c)}
                      >
                        ⌫
                      </button>
                    )}
                    <button
                      type="button"
                      className="icon"
                      title="Rename"
                      aria-label={`Rename “${c.title}”`}
                      data-testid="conversation-rename"
                      onClick={() => {
                        setName(c.title);
                        setRenaming(c.thread_id);
                      }}
                    >
                      ✎
                    </button>
                    <button
                      type="button"
                      className="icon"
                      title="Delete"
                      aria-label={`Delete “${c.title}”`}
                      data-testid="conversation-delete"
                      onClick={() => {
                        if (window.confirm(`Delete “${c.title}”${c.parent_thread_id ? "" : " and all its branches"}?`))
                          props.onDelete(c);
                      }}
                    >
                      ✕
                    </button>
                  </span>
                </li>
              );
            })}
          </ul>
          {shared.length > 0 && (
            <>
              <div className="menu-group muted small" data-testid="shared-group">
                Shared with you
              </div>
              <ul>
                {shared.map(({ c, depth }) => (
                  <li
                    key={c.thread_id}
                    style={{ paddingLeft: 8 + depth * 18 }}
                    className={`${c.thread_id === props.currentThread ? "current" : ""} ${c.root_thread_id === props.currentRoot ? "family" : ""}`}
                  >
                    <button
                      type="button"
                      className="item"
                      data-testid="conversation-item"
                      data-thread-id={c.thread_id}
                      data-role={c.role}
                      onClick={() => {
                        setOpen(false);
                        props.onOpen(c);
                      }}
                    >
                      <span className="title">
                        {depth > 0 && "↳ "}
                        {c.name && <span className="name-tag">⎇ {c.name}</span>}
                        {c.title}
                      </span>
                      <span className="sub muted">
                        by {c.owner} ·{" "}
                        {c.parent_thread_id !== null && c.branch_point_turn !== null
                          ? `branched at step ${c.branch_point_turn}`
                          : stepsText(familySteps(props.shared ?? [], c))}{" "}
                        ·{" "}
                        <span className="role-tag" data-testid="shared-role">
                          {c.role}
                        </span>
                      </span>
                    </button>
                    <span className="item-actions">
                      {c.parent_thread_id === null && <ExportButton c={c} onExport={exportOne} />}
                    </span>
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
    </div>
  );
}

/** Download a family (own or shared with you): as one JSON document (to import it
 * again), or as the analysis table (a CSV, one row per step, for a notebook). */
function ExportButton({
  c,
  onExport,
}: {
  c: Conversation;
  onExport: (c: Conversation, f: ExportFormat | Dataset) => void;
}) {
  return (
    <>
      <button
        type="button"
        className="icon"
        title="Export this conversation with all its paths (a .json file)"
        aria-label={`Export “${c.title}”`}
        data-testid="conversation-export"
        onClick={() => onExport(c, "json")}
      >
        ⤓
      </button>
      <button
        type="button"
        className="icon csv"
        title="Export every step of this conversation for analysis (a .csv file, one row per step)"
        aria-label={`Export “${c.title}” as CSV`}
        data-testid="conversation-export-csv"
        onClick={() => onExport(c, "csv")}
      >
        CSV
      </button>
      <DatasetExports title={c.title} onExport={(d) => onExport(c, d)} />
    </>
  );
}
