"use client";
import { useRouter, useSearchParams } from "next/navigation";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useArchive, useChosenPath } from "@/hooks/use-big-trees";
import { useConfirmDiscard } from "@/hooks/use-confirm-discard";
import { useFamilyEvents } from "@/hooks/use-family-events";
import { useGraphKeys } from "@/hooks/use-graph-keys";
import { useNewConversation } from "@/hooks/use-new-conversation";
import { usePageKeys } from "@/hooks/use-page-keys";
import { useMerge } from "@/hooks/use-merge";
import { messageOf, useStudioActions } from "@/hooks/use-studio-actions";
import { useConversations, useGraph, useHistory, useMessages, useWorkspace } from "@/hooks/use-studio-data";
import { useStudioView } from "@/hooks/use-studio-view";
import { useHandEdits } from "@/hooks/use-ledger";
import { useTrajectoryFocus } from "@/hooks/use-trajectory-focus";
import { useWayBack } from "@/hooks/use-way-back";
import { UNREACHABLE } from "@/lib/api/client";
import {
  breadcrumbs,
  choiceMap,
  descend,
  foldFlow,
  isFolded,
  siblingsOf,
  treeIndex,
  type Siblings,
} from "@/lib/big-trees";
import { ownsNoTurn, tipNodeId, type Graph } from "@/lib/graph";
import { handEditsAlongPath, handEditsByNode } from "@/lib/ledger";
import { progressText } from "@/lib/research";
import { whereabouts } from "@/lib/where";
import { ChatPanel } from "./chat-panel";
import { CompareView } from "./compare-view";
import { ConfirmDialog } from "./confirm-dialog";
import type { CardActions } from "./graph/commit-card";
import { PathBar } from "./graph/path-bar";
import { TrajectoryPanel } from "./graph/trajectory-panel";
import { HistoryMenu } from "./history-menu";
import { CodeFilter } from "./ledger/code-filter";
import { NodeDetails } from "./ledger/node-details";
import { KeysOverlay } from "./keys-overlay";
import { MergeDialog } from "./merge-dialog";
import { Landing } from "./landing";
import { RestoreBanner } from "./restore-banner";
import { SearchBox } from "./search-box";
import { StepMenu } from "./step-menu";
import { TitleBar } from "./title-bar";
import { WorkspacePanel } from "./workspace-panel";
import { ReadOnlyComposer, SharedBanner } from "./sharing/shared-banner";
import { ShareButton } from "./sharing/share-dialog";
import { useSharing, withShared } from "@/hooks/use-sharing";

const EMPTY_LABELS: ReadonlyMap<string, string> = new Map();
const NO_NODES: readonly { codes?: string[] }[] = [];

/**
 * The studio page. The URL names a thread (`?thread=`) and so a family; the studio
 * shows the family's working thread and follows its head, as every client does.
 * Opening a path (history menu, offshoot chip) checks out its latest step; restoring
 * a step checks out that node (a server-held draft); the server's discard refusal
 * becomes the confirm dialog. The page composes: writes are useStudioActions', the
 * derived views useStudioView's, what the trajectory points at useTrajectoryFocus'.
 */
export function Studio() {
  const params = useSearchParams();
  const router = useRouter();
  const anchor = params.get("thread");

  const conversations = useConversations();
  // A conversation not created yet (its first send or edit creates it) reads nothing.
  const requestedNew = params.get("new") === "1";
  const fresh = useNewConversation({ anchor, requested: requestedNew, conversations: conversations.data });
  const { pending } = fresh;
  const history = useHistory(pending ? null : anchor);
  // A path that owns no turn yet is shown on request; it becomes the working thread on send.
  const [stub, setStub] = useState<string | null>(null);
  const working = history.data?.working_thread_id ?? null;
  const head = history.data?.head_turn_id ?? null;
  const familyRoot = history.data?.root_thread_id ?? null;
  useEffect(() => setStub(null), [working, head]);
  // (while a conversation just created loads, its id stays on screen)
  const displayed = pending ? anchor : (stub ?? working ?? (requestedNew ? anchor : null));
  const { settle } = fresh;
  const loaded = history.data !== undefined;
  useEffect(() => settle(loaded), [settle, loaded]);
  const clearStub = useCallback(() => setStub(null), []);

  const stored = pending ? null : displayed;
  const graph = useGraph(stored);
  const messages = useMessages(stored);
  const workspace = useWorkspace(stored);
  // The event stream starts where the history was read: nothing replayed, nothing missed.
  const events = useFamilyEvents(pending ? null : anchor, history.data ? (history.data.server_seq ?? 0) : null);
  const { connected } = events;
  const sharing = useSharing(familyRoot);
  const listed = useMemo(() => withShared(conversations.data, sharing.shared), [conversations.data, sharing.shared]);
  const view = useStudioView({
    conversations: listed,
    graph: graph.data,
    messages: messages.data,
    workspace: workspace.data,
    head,
    displayed,
    anchor,
  });

  const [error, setError] = useState<string | null>(null);
  // "Could not be reached" is out of date once the family's event stream is back.
  useEffect(() => {
    if (connected) setError((e) => (e === UNREACHABLE ? null : e));
  }, [connected]);
  const { confirm, ask, dismiss } = useConfirmDiscard();
  const act = useStudioActions({ anchor, displayed, familyRoot, setError, ask, onCheckedOut: clearStub });
  const { checkout, stop, renameThread, running } = act;

  const navigate = useCallback(
    (thread: string | null) => {
      if (thread !== anchor) router.push(thread ? `/?thread=${thread}` : "/");
    },
    [anchor, router],
  );
  const { current, restoredAt } = view;
  const wayBack = useWayBack({
    familyRoot,
    head,
    restored: restoredAt !== null,
    graph: view.graph,
    displayed,
    checkout,
  });
  const { restore } = wayBack;
  const focus = useTrajectoryFocus({ flow: view.flow, familyRoot, head, navigate, checkout: restore });

  const familyGraph = view.graph;
  const openThread = useCallback(
    async (threadId: string) => {
      const inFamily = familyGraph?.threads.find((t) => t.thread_id === threadId);
      if (familyGraph && inFamily) {
        if (inFamily.parent_thread_id !== null && ownsNoTurn(inFamily)) {
          setStub(threadId);
        } else if (working !== threadId) {
          const tip = tipNodeId(familyGraph, threadId);
          if (tip !== null && !(await checkout(tip))) return;
        } else setStub(null);
      }
      navigate(threadId);
    },
    [familyGraph, working, checkout, navigate],
  );
  const onOpenThread = useCallback((threadId: string) => void openThread(threadId), [openThread]);
  const onRestore = useCallback((nodeId: string) => void restore(nodeId), [restore]);
  const { onCompare } = focus;
  // A card's click shows its step in the chat and opens its details (the ledger).
  const [detailsNode, setDetailsNode] = useState<string | null>(null);
  useEffect(() => setDetailsNode(null), [familyRoot]);
  const focusStep = focus.onFocusStep;
  const onFocusStep = useCallback(
    (nodeId: string) => {
      setDetailsNode(nodeId);
      focusStep(nodeId);
    },
    [focusStep],
  );
  // Folded branches hide their cards: the keyboard selection moves over what is shown.
  const [folds, setFolds] = useState<ReadonlyMap<string, boolean>>(new Map());
  const shownFlow = useMemo(
    () => (familyGraph && view.flow ? foldFlow(familyGraph, view.flow, folds) : null),
    [familyGraph, view.flow, folds],
  );
  const merging = useMerge({ target: displayed, labels: view.flow?.labels ?? EMPTY_LABELS, setError, ask });
  const onBringIn = merging.open;
  const keys = useGraphKeys({ flow: shownFlow, onRestore, onCompare, onBringIn });
  const { openMenu } = keys;
  const cardActions: CardActions = useMemo(
    () => ({ onRestore, onFocusStep, onCompare, onBringIn, onRename: renameThread, onMenu: openMenu }),
    [onRestore, onFocusStep, onCompare, onBringIn, renameThread, openMenu],
  );
  const handEdits = useHandEdits(familyRoot);
  const guide = view.guide;
  const editsByNode = useMemo(
    () =>
      handEditsAlongPath(
        [...guide.values()].sort((a, b) => a.turn - b.turn),
        handEditsByNode(handEdits.data ?? []),
      ),
    [guide, handEdits.data],
  );
  const shownGraph = view.graph;
  const laneNames = useMemo(
    () => branchLabels(shownGraph?.threads ?? [], view.flow?.labels ?? EMPTY_LABELS, shownGraph?.nodes ?? []),
    [shownGraph, view.flow],
  );
  const [showKeys, setShowKeys] = useState(false);
  const toField = (testId: string) => () => document.querySelector<HTMLElement>(`[data-testid="${testId}"]`)?.focus();
  usePageKeys({
    help: () => setShowKeys((v) => !v),
    composer: toField("message-input"),
    search: toField("search-input"),
    graph: toField("graph-keys"),
    new: () => void act.newConversation(),
    leave: () => {
      if (showKeys) setShowKeys(false);
      else if (merging.merge !== null) merging.close();
      else if (keys.menu !== null) {
        keys.closeMenu();
        toField("graph-keys")();
      } else if (confirm !== null) dismiss();
      else if (focus.pick.a !== null) focus.onCancelCompare();
      else if (restoredAt !== null) void wayBack.back();
    },
  });
  const sendMessage = act.sendMessage;
  const { ensure } = fresh;
  const onSend = useCallback(
    async (text: string): Promise<boolean> => {
      try {
        if (!(await ensure())) return false;
      } catch (e) {
        setError(messageOf(e));
        return false;
      }
      return sendMessage(text);
    },
    [ensure, sendMessage],
  );
  const beforeWrite = pending ? ensure : undefined;
  const onStop = useCallback(() => void stop(), [stop]);

  // ---- big trees: folds, the chosen path, breadcrumbs, sibling switching, archive ----
  // Recorded from fresh answers only: a cached history shown while it refetches (coming
  // back to a thread) may hold a head that has moved since.
  const chosen = useChosenPath(familyRoot, history.isFetching ? null : head);
  const [centre, setCentre] = useState<{ nodeId: string; tick: number } | null>(null);
  const graphRef = useRef<Graph | undefined>(undefined);
  graphRef.current = familyGraph;
  const onFold = useCallback((threadId: string) => {
    setFolds((prev) => {
      const thread = graphRef.current?.threads.find((t) => t.thread_id === threadId);
      if (thread === undefined) return prev;
      return new Map(prev).set(threadId, !isFolded(thread, prev));
    });
  }, []);
  const tree = useMemo(() => (familyGraph ? treeIndex(familyGraph) : null), [familyGraph]);
  const siblings = useMemo(() => {
    const out = new Map<string, Siblings>();
    if (tree === null) return out;
    for (const step of guide.values()) {
      const found = siblingsOf(tree, step.nodeId);
      if (found !== null) out.set(step.nodeId, found);
    }
    return out;
  }, [tree, guide]);
  const crumbs = useMemo(() => breadcrumbs(guide), [guide]);
  const choices = useMemo(() => choiceMap(chosen?.choices), [chosen]);
  const onJump = useCallback(
    (nodeId: string) => {
      onFocusStep(nodeId);
      setCentre({ nodeId, tick: Date.now() });
    },
    [onFocusStep],
  );
  const onSwitch = useCallback(
    (nodeId: string) => {
      if (tree === null) return;
      const leaf = descend(tree, nodeId, choices);
      setCentre({ nodeId, tick: Date.now() });
      void openThread(leaf.slice(0, leaf.lastIndexOf(":")));
    },
    [tree, choices, openThread],
  );
  const onArchiveError = useCallback((message: string) => setError(message), []);
  const archive = useArchive(onArchiveError);
  const threadNames = useMemo(() => {
    const names = new Map<string, string>();
    for (const t of familyGraph?.threads ?? []) {
      const first = view.flow?.cards.find((c) => c.threadId === t.thread_id && c.firstOfThread);
      names.set(t.thread_id, t.name ?? t.summary ?? (first ? `the path from step ${first.label}` : t.title));
    }
    return names;
  }, [familyGraph, view.flow]);
  const restoreFound = focus.onRestoreFound;
  const onRestoreFound = useCallback(() => void restoreFound(), [restoreFound]);

  // Another client's turn, as the event stream tells it, while the server says a turn
  // is active: a stream that joined mid-turn and missed its end never leaves the
  // composer locked.
  const activeTurn = history.data?.active_turn ?? null;
  const live = activeTurn !== null || history.isFetching ? events.live : null;
  const busy = running !== null || activeTurn !== null || live !== null;
  const labels = view.flow?.labels ?? EMPTY_LABELS;
  const { comparing } = focus;
  const menuCard = keys.menu === null ? undefined : view.flow?.cards.find((c) => c.id === keys.menu);
  const where = useMemo(() => whereabouts(view.graph, view.flow, displayed), [view.graph, view.flow, displayed]);

  return (
    <div className="studio">
      {anchor !== null && (
        <a
          className="skip-link"
          href="#message-input"
          data-testid="skip-link"
          onClick={(e) => {
            e.preventDefault();
            toField("message-input")();
          }}
        >
          Skip to the message box
        </a>
      )}
      <header className="topbar">
        <span className="brand">HAICO</span>
        <HistoryMenu
          conversations={conversations.data}
          loading={conversations.isLoading}
          currentThread={displayed}
          currentRoot={familyRoot}
          onOpen={(c) => {
            // a hit of an earlier search does not follow the user to another path
            focus.onDismissFound();
            void openThread(c.thread_id);
          }}
          onArchive={(c) => void archive(c.thread_id, true)}
          onNew={() => void act.newConversation()}
          onRename={act.renameConversation}
          onDelete={(c) => void act.deleteConversation(c)}
          onExport={(c) => void act.exportConversation(c)}
          onImport={(f) => void act.importConversation(f)}
          importing={act.importing !== null}
        />
        {act.importing && (
          <span className="import-progress" data-testid="import-progress" role="status" title={act.importing.fileName}>
            Importing {act.importing.fileName}
            <progress max={Math.max(1, act.importing.total)} value={act.importing.loaded} />
            <span className="muted">{progressText(act.importing.loaded, act.importing.total)}</span>
          </span>
        )}
        <button
          type="button"
          className="primary"
          data-testid="new-conversation"
          onClick={() => void act.newConversation()}
        >
          + New conversation
        </button>
        {anchor !== null && (
          <TitleBar conversation={current} where={where} restoredAt={restoredAt} onRename={act.renameConversation} />
        )}
        {sharing.canShare && familyRoot !== null && <ShareButton root={familyRoot} />}
        <SearchBox conversations={conversations.data} labels={labels} onPick={focus.onSearchHit} />
        <button
          type="button"
          className="keys-button"
          data-testid="keys-button"
          aria-keyshortcuts="?"
          title="Keys (?)"
          onClick={() => setShowKeys(true)}
        >
          <span aria-hidden="true">?</span>
          <span className="sr-only">Keyboard keys and step labels</span>
        </button>
      </header>
      {error && (
        <div className="error-banner" data-testid="error-banner" role="alert">
          <span>{error}</span>
          <button type="button" className="icon" aria-label="Dismiss" onClick={() => setError(null)}>
            ✕
          </button>
        </div>
      )}
      {anchor !== null && <SharedBanner sharing={sharing} />}
      {anchor !== null && restoredAt !== null && (
        <RestoreBanner
          label={restoredAt}
          backLabel={wayBack.target === null ? null : (labels.get(wayBack.target) ?? null)}
          onBack={() => void wayBack.back()}
        />
      )}
      {anchor === null ? (
        <Landing
          conversations={conversations.data}
          loading={conversations.isLoading}
          onOpen={(c) => navigate(c.thread_id)}
          onNew={() => void act.newConversation()}
        />
      ) : history.error && !history.data ? (
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
          {comparing && focus.pick.a !== null && focus.pick.b !== null && (
            <CompareView
              thread={displayed}
              a={focus.pick.a}
              b={focus.pick.b}
              labels={labels}
              questions={view.questions}
              onSwap={focus.onSwap}
              onClose={focus.onCancelCompare}
              onRestore={onRestore}
            />
          )}
          <fieldset className="ws-slot" hidden={comparing} disabled={!sharing.canSend}>
            <WorkspacePanel
              key={displayed}
              thread={displayed}
              workspace={workspace.data}
              loading={workspace.isLoading}
              restoredAt={restoredAt}
              onError={(e) => setError(messageOf(e))}
              beforeWrite={beforeWrite}
            />
          </fieldset>
          <div className="right">
            <PathBar crumbs={crumbs} thread={displayed} names={threadNames} onJump={onJump} onArchive={archive} />
            <TrajectoryPanel
              flow={shownFlow}
              details={view.details}
              rejected={view.rejected}
              pick={focus.pick}
              found={focus.found}
              headTurnId={head}
              frame={comparing ? "comparing" : ""}
              collapsed={focus.collapsed}
              onToggle={focus.onToggle}
              actions={cardActions}
              onCompareWithHead={focus.onCompareWithHead}
              onCancelCompare={focus.onCancelCompare}
              onRestoreFound={onRestoreFound}
              onDismissFound={focus.onDismissFound}
              onOpenThread={onOpenThread}
              onFold={onFold}
              centre={centre}
              loading={graph.isLoading}
              selection={keys.selection}
              onGraphKey={keys.onGraphKey}
            />
            <CodeFilter nodes={view.graph?.nodes ?? NO_NODES} />
            {detailsNode !== null && (
              <NodeDetails
                key={detailsNode}
                nodeId={detailsNode}
                label={labels.get(detailsNode) ?? detailsNode.slice(detailsNode.lastIndexOf(":") + 1)}
                title={current?.title ?? ""}
                branchLabels={laneNames}
                onClose={() => setDetailsNode(null)}
                onError={setError}
              />
            )}
            <ChatPanel
              handEdits={editsByNode}
              thread={displayed}
              turns={view.turns}
              merges={view.merges}
              guide={view.guide}
              running={running && running.thread === displayed ? running : null}
              live={live}
              busy={busy}
              loading={messages.isLoading}
              restoredAt={restoredAt}
              flash={focus.flash}
              onSend={onSend}
              onStop={onStop}
              onRestore={onRestore}
              onOpenThread={onOpenThread}
              siblings={siblings}
              onSwitch={onSwitch}
              composer={
                sharing.canSend ? undefined : <ReadOnlyComposer sharing={sharing} thread={displayed} head={head} />
              }
            />
          </div>
        </main>
      )}
      {menuCard && menuCard.kind === "turn" && (
        <StepMenu
          card={menuCard}
          comparing={focus.pick.a !== null && focus.pick.a !== menuCard.id}
          onRestore={onRestore}
          onCompare={onCompare}
          onBringIn={onBringIn}
          onShow={onFocusStep}
          onClose={keys.closeMenu}
        />
      )}
      <KeysOverlay open={showKeys} onClose={() => setShowKeys(false)} />
      <MergeDialog
        state={merging.merge}
        onMode={merging.setMode}
        onChoose={merging.choose}
        onApply={() => void merging.apply()}
        onClose={merging.close}
      />
      <ConfirmDialog state={confirm} onCancel={dismiss} />
    </div>
  );
}

/** thread id → how the usage summary names a branch without a name: the label of its
 * first step ("main" for the root). */
function branchLabels(
  threads: readonly { thread_id: string; parent_thread_id: string | null }[],
  labels: ReadonlyMap<string, string>,
  nodes: readonly { id: string; thread_id: string; turn_index: number }[],
): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of threads) {
    if (t.parent_thread_id === null) {
      out.set(t.thread_id, "main");
      continue;
    }
    const first = nodes.filter((n) => n.thread_id === t.thread_id).sort((a, b) => a.turn_index - b.turn_index)[0];
    const label = first ? labels.get(first.id) : undefined;
    out.set(t.thread_id, label ? `from ${label}` : t.thread_id.slice(0, 9));
  }
  return out;
}
