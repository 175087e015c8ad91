"use client";
import { useQuery } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";
import { useClickOutside } from "@/hooks/use-click-outside";
import { useApi } from "@/hooks/use-api";
import { ApiError, unwrap, type Conversation, type SearchHit } from "@/lib/api/client";
import { keys } from "@/lib/query-keys";
import { highlight, KIND_NAMES } from "@/lib/research";

export interface SearchBoxProps {
  conversations: Conversation[] | undefined;
  /** node id → step label, for hits in the family on screen */
  labels: ReadonlyMap<string, string>;
  onPick: (hit: SearchHit) => void;
}

const LIMIT = 20;

/** The search box over every conversation of the caller (every branch): results with
 * their kind and a snippet, the query's words marked; picking one opens its step. */
export function SearchBox({ conversations, labels, onPick }: SearchBoxProps) {
  const { client } = useApi();
  const [text, setText] = useState("");
  const [query, setQuery] = useState("");
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const ref = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const id = window.setTimeout(() => setQuery(text.trim()), 250);
    return () => window.clearTimeout(id);
  }, [text]);
  useEffect(() => setActive(0), [query]);
  const close = useCallback(() => setOpen(false), []);
  useClickOutside(ref, open, close);

  const search = useQuery({
    queryKey: keys.search(query),
    enabled: query.length > 0,
    staleTime: 0,
    queryFn: async () => unwrap(await client.GET("/api/search", { params: { query: { q: query, limit: LIMIT } } })),
  });
  const hits = query.length > 0 ? (search.data?.results ?? []) : [];
  const byId = new Map((conversations ?? []).map((c) => [c.thread_id, c] as const));

  const pick = (hit: SearchHit) => {
    setOpen(false);
    onPick(hit);
  };

  return (
    <div className="search" ref={ref}>
      <input
        type="search"
        data-testid="search-input"
        placeholder="Search all conversations…"
        aria-label="Search all conversations"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onKeyDown={(e) => {
          if (e.key === "Escape") setOpen(false);
          else if (e.key === "ArrowDown") setActive((i) => Math.min(i + 1, Math.max(0, hits.length - 1)));
          else if (e.key === "ArrowUp") setActive((i) => Math.max(0, i - 1));
          else if (e.key === "Enter" && hits[active]) pick(hits[active]);
        }}
      />
      {open && text.trim().length > 0 && (
        <div className="search-results" data-testid="search-results" role="listbox" aria-label="Search results">
          {search.isFetching && hits.length === 0 ? (
            <div className="muted pad">Searching…</div>
          ) : search.error ? (
            <div className="pad cmp-error">
              {search.error instanceof ApiError ? search.error.message : "The search failed."}
            </div>
          ) : query.length > 0 && search.isSuccess && hits.length === 0 ? (
            <div className="muted pad">Nothing found for “{query}”.</div>
          ) : (
            <ul role="none">
              {hits.map((h, i) => {
                const thread = byId.get(h.thread_id);
                const root = byId.get(h.root_thread_id);
                const turn = h.node_id.slice(h.node_id.lastIndexOf(":") + 1);
                const label = labels.get(h.node_id) ?? turn;
                return (
                  <li key={`${h.node_id}:${h.kind}`} role="none">
                    <button
                      type="button"
                      role="option"
                      aria-selected={i === active}
                      className={`search-hit ${i === active ? "active" : ""}`}
                      data-testid="search-result"
                      data-node-id={h.node_id}
                      data-kind={h.kind}
                      // a pointer that moves picks; a list appearing under a resting
                      // pointer leaves the keyboard's choice alone
                      onMouseMove={() => setActive(i)}
                      onClick={() => pick(h)}
                    >
                      <span className="hit-head">
                        <span className={`badge kind-${h.kind}`}>{KIND_NAMES[h.kind]}</span>
                        <span className="hit-where">
                          {root?.title ?? thread?.title ?? "a conversation"}
                          {thread?.name ? ` · ⎇ ${thread.name}` : ""} · step {label}
                        </span>
                      </span>
                      <span className="hit-snippet">
                        {highlight(h.snippet, query).map((p, k) =>
                          p.hit ? <mark key={k}>{p.text}</mark> : <span key={k}>{p.text}</span>,
                        )}
                      </span>
                    </button>
                  </li>
                );
              })}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
