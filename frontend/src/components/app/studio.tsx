"use client";
import { useRouter, useSearchParams } from "next/navigation";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useChosenOpening } from "@/hooks/use-chosen-opening";
import { useConfirmDiscard } from "@/hooks/use-confirm-discard";
import { useFamilyEvents } from "@/hooks/use-family-events";
import { useGraphKeys } from "@/hooks/use-graph-keys";
import { useGraphWhatIf } from "@/hooks/use-graph-whatif";
import { useNewConversation } from "@/hooks/use-new-conversation";
import { usePageKeys } from "@/hooks/use-page-keys";
import { useMerge } from "@/hooks/use-merge";
import { messageOf, useStudioActions } from "@/hooks/use-studio-actions";
import { useConversations, useGraph, useHistory, useMessages, useWorkspace } from "@/hooks/use-studio-data";
import { useStudioView } from "@/hooks/use-studio-view";
import { useHandEdits } from "@/hooks/use-ledger";
import { useTrajectoryFocus } from "@/hooks/use-trajectory-focus";
import { useTreeNavigation } from "@/hooks/use-tree-navigation";
import { useWayBack } from "@/hooks/use-way-back";
import { UNREACHABLE } from "@/lib/api/client";
import { ownsNoTurn, tipNodeId } from "@/lib/graph";
import { branchLabels, handEditsAlongPath, handEditsByNode } from "@/lib/ledger";
import { whereabouts } from "@/lib/where";
import { ChatPanel } from "./chat-panel";
import { CompareView } from "./compare-view";
import { ConfirmDialog } from "./confirm-dialog";
import type { CardActions } from "./graph/commit-card";
import { PathBar } from "./graph/path-bar";
import { TrajectoryPanel } from "./graph/trajectory-panel";
import { CodeFilter } from "./ledger/code-filter";
import { NodeDetails } from "./ledger/node-details";
import { KeysOverlay } from "./keys-overlay";
import { MergeDialog } from "./merge-dialog";
import { ErrorBanner } from "./error-banner";
import { Landing } from "./landing";
import { RestoreBanner } from "./restore-banner";
import { StepMenu } from "./step-menu";
import { StudioHeader } from "./studio-header";
import { WorkspacePanel } from "./workspace-panel";
import { GraphWhatIf } from "./whatif/graph-whatif";
import { ReadOnlyComposer, SharedBanner } from "./sharing/shared-banner";
import { ShareButton } from "./sharing/share-dialog";
import { useSharing, withShared } from "@/hooks/use-sharing";
import { AccessContext } from "@/hooks/use-access";
import { accessOf } from "@/lib/share-link";

const EMPTY_LABELS: ReadonlyMap<string, string> = new Map();
const NO_NODES: readonly { codes?: string[] }[] = [];

/** The studio page. The URL names a thread (`?thread=`) and so a family; the studio shows
 * the family's working thread and follows its head, as every client does. Opening a path
 * checks out its latest step; restoring a step checks out that node (a server-held draft);
 * the server's discard refusal becomes the confirm dialog. The page composes: writes are
 * useStudioActions', derived views useStudioView's, the trajectory's focus useTrajectoryFocus'. */
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
  // What the page offers: a viewer or commenter of a shared family gets no write control
  // (the server would refuse it), and opens other paths without moving the shared head.
  const access = useMemo(() => accessOf(sharing.role), [sharing.role]);
  const canEdit = access.edit;
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

  // The family opens on the path this user last looked at. Recorded from fresh answers
  // only: a cached history shown while it refetches may hold a head that has moved since.
  const { chosen, moveTo } = useChosenOpening({
    anchor: pending ? null : anchor,
    familyRoot,
    working,
    head,
    fresh: !history.isFetching,
    displayed,
    graph: view.graph,
    showThread: setStub,
  });
  const familyGraph = view.graph;
  const openThread = useCallback(
    async (threadId: string) => {
      const inFamily = familyGraph?.threads.find((t) => t.thread_id === threadId);
      if (familyGraph && inFamily) {
        if ((inFamily.parent_thread_id !== null && ownsNoTurn(inFamily)) || (!canEdit && working !== threadId)) {
          setStub(threadId);
        } else if (working !== threadId) {
          const tip = tipNodeId(familyGraph, threadId);
          if (tip !== null && !(await moveTo(tip, () => checkout(tip)))) return;
        } else setStub(null);
      }
      navigate(threadId);
    },
    [familyGraph, working, checkout, navigate, canEdit, moveTo],
  );
  const onOpenThread = useCallback((threadId: string) => void openThread(threadId), [openThread]);
  const onRestore = useCallback(
    (nodeId: string) => {
      if (canEdit) void restore(nodeId);
    },
    [restore, canEdit],
  );
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
  const nav = useTreeNavigation({
    graph: familyGraph,
    flow: view.flow,
    guide: view.guide,
    chosen,
    onFocusStep,
    openThread,
    setError,
  });
  const { shownFlow, archive } = nav;
  const merging = useMerge({ target: displayed, labels: view.flow?.labels ?? EMPTY_LABELS, setError, ask });
  const bringIn = merging.open;
  const onBringIn = useCallback(
    (nodeId: string) => {
      if (canEdit) bringIn(nodeId);
    },
    [bringIn, canEdit],
  );
  const keys = useGraphKeys({ flow: shownFlow, onRestore, onCompare, onBringIn });
  const { openMenu } = keys;
  // What if on the graph: a replay's range picked there (a card's click picks its end), try N alternatives
  const whatif = useGraphWhatIf({
    graph: view.graph,
    labels: view.flow?.labels ?? EMPTY_LABELS,
    familyRoot,
    onFocusStep,
    setError,
  });
  const { onStep } = whatif;
  // (a viewer, who may not replay, sees no ⋔ on the cards)
  const onTryAlternatives = sharing.canSend ? whatif.onTryAlternatives : undefined;
  const cardActions: CardActions = useMemo(
    () => ({
      onRestore,
      onFocusStep: onStep,
      onCompare,
      onBringIn,
      onRename: renameThread,
      onMenu: openMenu,
      onTryAlternatives,
    }),
    [onRestore, onStep, onCompare, onBringIn, renameThread, openMenu, onTryAlternatives],
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
      else if (whatif.range !== null) whatif.closeRange();
      else if (focus.pick.a !== null) focus.onCancelCompare();
      else if (restoredAt !== null && canEdit) void wayBack.back();
    },
  });
  const sendMessage = act.sendMessage;
  // A conversation not created yet is created by its first send or edit, in the same
  // request: a send or an edit that fails creates nothing (useNewConversation).
  const onSend = useCallback((text: string): Promise<boolean> => sendMessage(text, pending), [sendMessage, pending]);
  const { firstWrite } = fresh;
  const onStop = useCallback(() => void stop(), [stop]);
  const onPanelError = useCallback((e: unknown) => setError(messageOf(e)), []);

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
    <AccessContext.Provider value={access}>
      <div className="studio">
        <StudioHeader
          anchor={anchor}
          conversations={conversations.data}
          shared={sharing.shared}
          viaLink={sharing.viaLink}
          loading={conversations.isLoading}
          displayed={displayed}
          familyRoot={familyRoot}
          current={current}
          where={where}
          restoredAt={restoredAt}
          labels={labels}
          act={act}
          onOpen={(c) => {
            // a hit of an earlier search does not follow the user to another path
            focus.onDismissFound();
            void openThread(c.thread_id);
          }}
          onArchive={(c) => void archive(c.thread_id, true)}
          onSearchHit={focus.onSearchHit}
          onKeys={() => setShowKeys(true)}
          toComposer={toField("message-input")}
          share={sharing.canShare && familyRoot !== null ? <ShareButton root={familyRoot} /> : null}
        />
        <ErrorBanner message={error} onDismiss={() => setError(null)} />
        {anchor !== null && <SharedBanner sharing={sharing} />}
        {anchor !== null && restoredAt !== null && canEdit && (
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
            <fieldset className="ws-slot" hidden={comparing} disabled={!canEdit}>
              <WorkspacePanel
                key={displayed}
                thread={displayed}
                workspace={workspace.data}
                loading={workspace.isLoading}
                restoredAt={restoredAt}
                onError={onPanelError}
                write={firstWrite}
              />
            </fieldset>
            <div className="right">
              <PathBar
                crumbs={nav.crumbs}
                thread={displayed}
                names={nav.threadNames}
                onJump={nav.onJump}
                onArchive={archive}
              />
              <GraphWhatIf whatif={whatif} head={head} onError={setError} />
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
                onFold={nav.onFold}
                centre={nav.centre}
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
                  onReplayRange={whatif.beginRange}
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
                siblings={nav.siblings}
                onSwitch={nav.onSwitch}
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
            fold={nav.shownFlow?.cards.find((c) => c.id === menuCard.id)?.fold}
            onFold={nav.onFold}
            onReplay={canEdit ? whatif.onReplay : undefined}
            replayTo={whatif.picking}
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
    </AccessContext.Provider>
  );
}
