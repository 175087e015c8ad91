"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { useFamilyEvents } from "@/hooks/use-family-events";
import {
  keys,
  useConversations,
  useGraph,
  useHistory,
  useMessages,
  useRefreshAll,
  useWorkspace,
} from "@/hooks/use-studio-data";
import { useTransfer } from "@/hooks/use-transfer";
import { useTurn } from "@/hooks/use-turn";
import { ApiError, toApiError, UNREACHABLE, unwrap, type Conversation } from "@/lib/api/client";
import { activePathGuide, buildFlowGraph, ownsNoTurn, tipNodeId, type GuideStep } from "@/lib/graph";
import { NO_PICK, pickForCompare, progressText, rejectedByStep, type ComparePick } from "@/lib/research";
import { groupTurns, type TurnState } from "@/lib/transcript";
import { ChatPanel } from "./chat-panel";
import { CompareView } from "./compare-view";
import { ConfirmDialog, type ConfirmState } from "./confirm-dialog";
import type { CardActions, CardDetail } from "./graph/commit-card";
import { TrajectoryPanel } from "./graph/trajectory-panel";
import { HistoryMenu } from "./history-menu";
import { Landing } from "./landing";
import { SearchBox, type SearchHit } from "./search-box";
import { WorkspacePanel } from "./workspace-panel";

function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : "Something went wrong.";
}

const EMPTY_GUIDE: ReadonlyMap<number, GuideStep> = new Map();
const EMPTY_LABELS: ReadonlyMap<string, string> = new Map();

/**
 * The studio page. The URL names a thread (`?thread=`) and so a family; the studio
 * shows the family's working thread and follows its head, as every client does.
 * Opening a path (history menu, offshoot chip) checks out its latest step; restoring
 * a step checks out that node (a server-held draft); the server's discard refusal
 * becomes the confirm dialog.
 */
export function Studio() {
  const params = useSearchParams();
  const router = useRouter();
  const anchor = params.get("thread");
  const { client } = useApi();
  const qc = useQueryClient();
  const refreshAll = useRefreshAll();

  const conversations = useConversations();
  const history = useHistory(anchor);
  // A path that owns no turn yet is shown on request; it becomes the working thread on send.
  const [stub, setStub] = useState<string | null>(null);
  const working = history.data?.working_thread_id ?? null;
  const head = history.data?.head_turn_id ?? null;
  useEffect(() => setStub(null), [working, head]);
  const displayed = stub ?? working;

  const graph = useGraph(displayed);
  const messages = useMessages(displayed);
  const workspace = useWorkspace(displayed);
  const { live, connected } = useFamilyEvents(anchor, displayed);
  const { running, send } = useTurn();
  const { exportFamily, importFile, progress: importing } = useTransfer();

  const [error, setError] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<ConfirmState | null>(null);
  // "Could not be reached" is out of date once the family's event stream is back.
  useEffect(() => {
    if (connected) setError((e) => (e === UNREACHABLE ? null : e));
  }, [connected]);
  const [flash, setFlash] = useState<{ nodeId: string; tick: number } | null>(null);
  const [collapsed, setCollapsed] = useState(false);
  const [pick, setPick] = useState<ComparePick>(NO_PICK);
  const [found, setFound] = useState<{ nodeId: string; tick: number; hit: SearchHit } | null>(null);
  const familyRoot = history.data?.root_thread_id ?? null;
  useEffect(() => {
    setPick(NO_PICK);
    // a search hit belongs to its family: opening another family drops it
    if (familyRoot !== null) setFound((f) => (f !== null && f.hit.root_thread_id !== familyRoot ? null : f));
  }, [familyRoot]);

  const createdAt = useMemo(
    () => new Map((conversations.data ?? []).map((c) => [c.thread_id, Date.parse(c.created_at)] as const)),
    [conversations.data],
  );
  const flow = useMemo(
    () =>
      graph.data
        ? buildFlowGraph(graph.data, {
            headTurnId: head ?? graph.data.head_turn_id,
            displayedThreadId: displayed,
            createdAt,
          })
        : null,
    [graph.data, head, displayed, createdAt],
  );
  const guide = useMemo(
    () => (graph.data && flow && displayed ? activePathGuide(graph.data, flow, displayed) : EMPTY_GUIDE),
    [graph.data, flow, displayed],
  );
  const turns = useMemo(() => {
    const states = new Map<number, TurnState>();
    for (const step of guide.values()) {
      const node = graph.data?.nodes.find((n) => n.id === step.nodeId);
      if (node) states.set(step.turn, node.state);
    }
    return groupTurns(messages.data ?? [], states);
  }, [messages.data, guide, graph.data]);
  const details = useMemo(() => {
    const map = new Map<string, CardDetail>();
    for (const t of turns) {
      const step = guide.get(t.turn);
      if (step) map.set(step.nodeId, { reply: t.reply || null, steps: t.tools.length });
    }
    return map;
  }, [turns, guide]);

  const rejected = useMemo(() => rejectedByStep(workspace.data?.rejected ?? [], guide), [workspace.data, guide]);
  const questions = useMemo(
    () => new Map((graph.data?.nodes ?? []).map((n) => [n.id, n.user_message] as const)),
    [graph.data],
  );

  const displayedThread = graph.data?.threads.find((t) => t.thread_id === displayed);
  const restoredAt =
    displayedThread && displayedThread.parent_thread_id !== null && ownsNoTurn(displayedThread) && head
      ? (flow?.labels.get(head) ?? String(displayedThread.branch_point_turn ?? ""))
      : null;
  // The listed conversation the displayed thread is (a draft is unlisted: its nearest listed ancestor).
  const current = useMemo(() => {
    const listed = new Map((conversations.data ?? []).map((c) => [c.thread_id, c] as const));
    const threads = new Map((graph.data?.threads ?? []).map((t) => [t.thread_id, t] as const));
    let id: string | null = displayed;
    const seen = new Set<string>();
    while (id !== null && !seen.has(id)) {
      seen.add(id);
      const hit = listed.get(id);
      if (hit) return hit;
      id = threads.get(id)?.parent_thread_id ?? null;
    }
    return anchor ? listed.get(anchor) : undefined;
  }, [conversations.data, graph.data, displayed, anchor]);
  const busy = running !== null || (history.data?.active_turn ?? null) !== null || live !== null;

  const navigate = useCallback(
    (thread: string | null) => {
      const url = thread ? `/?thread=${thread}` : "/";
      if (thread !== anchor) router.push(url);
    },
    [anchor, router],
  );

  const checkout = useCallback(
    async (turnId: string, force = false): Promise<boolean> => {
      const via = displayed ?? anchor;
      if (via === null) return false;
      const result = await client.POST("/api/conversations/{thread_id}/checkout", {
        params: { path: { thread_id: via } },
        body: { turn_id: turnId, force },
      });
      if (result.error !== undefined || !result.response.ok) {
        const err = toApiError(result.response.status, result.error);
        if (err.code === "checkout_would_discard_changes") {
          return new Promise<boolean>((resolve) =>
            setConfirm({
              message: err.message,
              onDiscard: () => {
                setConfirm(null);
                void checkout(turnId, true).then(resolve);
              },
              onCancel: () => resolve(false),
            }),
          );
        }
        setError(err.message);
        return false;
      }
      if (anchor) qc.setQueryData(keys.history(anchor), result.data);
      setStub(null);
      setError(null);
      await refreshAll();
      return true;
    },
    [client, displayed, anchor, qc, refreshAll],
  );

  const onRestore = useCallback((nodeId: string) => void checkout(nodeId), [checkout]);
  const onCompare = useCallback((nodeId: string) => setPick((p) => pickForCompare(p, nodeId)), []);
  const onFocusStep = useCallback(
    (nodeId: string) => {
      const card = flow?.cards.find((c) => c.id === nodeId);
      if (card?.active) setFlash({ nodeId, tick: Date.now() });
    },
    [flow],
  );

  const openThread = useCallback(
    async (threadId: string) => {
      const g = graph.data;
      const inFamily = g?.threads.find((t) => t.thread_id === threadId);
      if (g && inFamily) {
        if (inFamily.parent_thread_id !== null && ownsNoTurn(inFamily)) {
          setStub(threadId);
        } else if (working !== threadId) {
          const tip = tipNodeId(g, threadId);
          if (tip !== null && !(await checkout(tip))) return;
        } else setStub(null);
      }
      navigate(threadId);
    },
    [graph.data, working, checkout, navigate],
  );

  /** Sends `text`; resolves to whether the server took it (see `SendOutcome`), so the
   * composer can give back a message that was not sent. */
  const onSend = useCallback(
    async (text: string, force = false): Promise<boolean> => {
      if (displayed === null) return false;
      setError(null);
      const { accepted, error: failure } = await send(displayed, text, force);
      if (failure === null) return accepted;
      if (!accepted && failure.code === "checkout_would_discard_changes") {
        return new Promise<boolean>((resolve) =>
          setConfirm({
            message: failure.message,
            onDiscard: () => {
              setConfirm(null);
              void onSend(text, true).then(resolve);
            },
            onCancel: () => resolve(false),
          }),
        );
      }
      setError(failure.message);
      return accepted;
    },
    [displayed, send],
  );

  const onStop = useCallback(async () => {
    if (displayed === null) return;
    const r = await client.POST("/api/conversations/{thread_id}/turns/cancel", {
      params: { path: { thread_id: displayed } },
    });
    if (r.error !== undefined) setError(toApiError(r.response.status, r.error).message);
    await refreshAll();
  }, [client, displayed, refreshAll]);

  const onNew = useCallback(async () => {
    try {
      const c = unwrap(await client.POST("/api/conversations", { body: {} }));
      await qc.invalidateQueries({ queryKey: keys.conversations });
      router.push(`/?thread=${c.thread_id}`);
    } catch (e) {
      setError(messageOf(e));
    }
  }, [client, qc, router]);

  const onRenameThread = useCallback(
    async (threadId: string, name: string | null) => {
      try {
        unwrap(
          await client.PATCH("/api/conversations/{thread_id}", {
            params: { path: { thread_id: threadId } },
            body: { name },
          }),
        );
        setError(null);
        await refreshAll();
      } catch (e) {
        setError(messageOf(e));
        throw e;
      }
    },
    [client, refreshAll],
  );
  const actions: CardActions = useMemo(
    () => ({ onRestore, onFocusStep, onCompare, onRename: onRenameThread }),
    [onRestore, onFocusStep, onCompare, onRenameThread],
  );
  const comparing = pick.a !== null && pick.b !== null;

  // A search hit: open its family if it is another one, frame and mark its card, and
  // flash its message when it is on the displayed path; restoring it is one click more.
  const onSearchHit = useCallback(
    (hit: SearchHit) => {
      setFound({ nodeId: hit.node_id, tick: Date.now(), hit });
      setCollapsed(false);
      if (hit.root_thread_id !== familyRoot) {
        setPick(NO_PICK);
        navigate(hit.root_thread_id);
      } else onFocusStep(hit.node_id);
    },
    [familyRoot, navigate, onFocusStep],
  );
  const onRestoreFound = useCallback(async () => {
    if (found === null) return;
    if (await checkout(found.nodeId)) setFound(null);
  }, [found, checkout]);

  const onRename = useCallback(
    async (c: Conversation, title: string): Promise<boolean> => {
      try {
        unwrap(
          await client.PATCH("/api/conversations/{thread_id}", {
            params: { path: { thread_id: c.thread_id } },
            body: { title },
          }),
        );
        await refreshAll();
        return true;
      } catch (e) {
        setError(messageOf(e));
        return false;
      }
    },
    [client, refreshAll],
  );

  const onExport = useCallback(
    async (c: Conversation) => {
      try {
        await exportFamily(c.thread_id, c.title);
      } catch (e) {
        setError(messageOf(e));
      }
    },
    [exportFamily],
  );

  const onImport = useCallback(
    async (file: File) => {
      setError(null);
      try {
        const c = await importFile(file);
        await qc.invalidateQueries({ queryKey: keys.conversations });
        router.push(`/?thread=${c.thread_id}`);
      } catch (e) {
        setError(`Could not import “${file.name}”: ${messageOf(e)}`);
      }
    },
    [importFile, qc, router],
  );

  const onDelete = useCallback(
    async (c: Conversation) => {
      try {
        unwrap(await client.DELETE("/api/conversations/{thread_id}", { params: { path: { thread_id: c.thread_id } } }));
        if (c.parent_thread_id === null && c.root_thread_id === history.data?.root_thread_id) router.push("/");
        else if (c.thread_id === anchor) router.push(`/?thread=${c.root_thread_id}`);
        await refreshAll();
      } catch (e) {
        setError(messageOf(e));
      }
    },
    [client, history.data, anchor, router, refreshAll],
  );

  return (
    <div className="studio">
      <header className="topbar">
        <span className="brand">HAICO</span>
        <HistoryMenu
          conversations={conversations.data}
          loading={conversations.isLoading}
          currentThread={displayed}
          currentRoot={history.data?.root_thread_id ?? null}
          onOpen={(c) => void openThread(c.thread_id)}
          onNew={() => void onNew()}
          onRename={onRename}
          onDelete={(c) => void onDelete(c)}
          onExport={(c) => void onExport(c)}
          onImport={(f) => void onImport(f)}
          importing={importing !== null}
        />
        {importing && (
          <span className="import-progress" data-testid="import-progress" role="status" title={importing.fileName}>
            Importing {importing.fileName}
            <progress max={Math.max(1, importing.total)} value={importing.loaded} />
            <span className="muted">{progressText(importing.loaded, importing.total)}</span>
          </span>
        )}
        <button type="button" className="primary" data-testid="new-conversation" onClick={() => void onNew()}>
          + New conversation
        </button>
        <span className="conv-title" data-testid="conversation-title">
          {current?.title ?? (anchor ? "" : "")}
          {restoredAt && <span className="badge warn">restored · step {restoredAt}</span>}
          {!restoredAt && current?.parent_thread_id && current.branch_point_turn !== null && (
            <span className="badge">branched at step {current.branch_point_turn}</span>
          )}
        </span>
        <SearchBox conversations={conversations.data} labels={flow?.labels ?? EMPTY_LABELS} onPick={onSearchHit} />
      </header>
      {error && (
        <div className="error-banner" data-testid="error-banner" role="alert">
          <span>{error}</span>
          <button type="button" className="icon" aria-label="Dismiss" onClick={() => setError(null)}>
            ✕
          </button>
        </div>
      )}
      {anchor === null ? (
        <Landing
          conversations={conversations.data}
          loading={conversations.isLoading}
          onOpen={(c) => navigate(c.thread_id)}
          onNew={() => void onNew()}
        />
      ) : history.error ? (
        <div className="state-page">
          <h2>This conversation cannot be opened</h2>
          <p data-testid="load-error">{messageOf(history.error)}</p>
          <button type="button" onClick={() => navigate(null)}>
            Back to all conversations
          </button>
        </div>
      ) : displayed === null ? (
        <div className="state-page">Loading the conversation…</div>
      ) : (
        <main className={`columns ${comparing ? "comparing" : ""}`}>
          {comparing && pick.a !== null && pick.b !== null && (
            <CompareView
              thread={displayed}
              a={pick.a}
              b={pick.b}
              labels={flow?.labels ?? EMPTY_LABELS}
              questions={questions}
              onSwap={() => setPick({ a: pick.b, b: pick.a })}
              onClose={() => setPick(NO_PICK)}
              onRestore={onRestore}
            />
          )}
          <div className="ws-slot" hidden={comparing}>
            <WorkspacePanel
              key={displayed}
              thread={displayed}
              workspace={workspace.data}
              loading={workspace.isLoading}
              restoredAt={restoredAt}
              onError={(e) => setError(messageOf(e))}
            />
          </div>
          <div className="right">
            <TrajectoryPanel
              flow={flow}
              details={details}
              rejected={rejected}
              pick={pick}
              found={found}
              headTurnId={head}
              frame={comparing ? "comparing" : ""}
              collapsed={collapsed}
              onToggle={() => setCollapsed(!collapsed)}
              actions={actions}
              onCompareWithHead={() => head !== null && setPick((p) => (p.a !== null ? { a: p.a, b: head } : p))}
              onCancelCompare={() => setPick(NO_PICK)}
              onRestoreFound={() => void onRestoreFound()}
              onDismissFound={() => setFound(null)}
              onOpenThread={(t) => void openThread(t)}
              loading={graph.isLoading}
            />
            <ChatPanel
              thread={displayed}
              turns={turns}
              guide={guide}
              running={running && running.thread === displayed ? running : null}
              live={live}
              busy={busy}
              loading={messages.isLoading}
              restoredAt={restoredAt}
              flash={flash}
              onSend={onSend}
              onStop={() => void onStop()}
              onRestore={onRestore}
              onOpenThread={(t) => void openThread(t)}
            />
          </div>
        </main>
      )}
      <ConfirmDialog state={confirm} onCancel={() => setConfirm(null)} />
    </div>
  );
}
