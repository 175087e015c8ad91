"use client";
import { useCallback, useMemo } from "react";
import { ChatPanel } from "@/features/chat/components/chat-panel";
import type { useComposer } from "@/features/chat/hooks/use-composer";
import { CodingButtonBar } from "@/features/coding/components/coding-bar";
import { CodingPanel } from "@/features/coding/components/coding-panel";
import type { useFamilyCoding } from "@/features/coding/hooks/use-coding";
import { CompareView } from "@/features/graph/components/compare-view";
import { PathBar } from "@/features/graph/components/path-bar";
import { TrajectoryPanel } from "@/features/graph/components/trajectory-panel";
import type { Trajectory } from "@/features/graph/hooks/use-trajectory";
import { CodeFilter } from "@/features/ledger/components/code-filter";
import { NodeDetails } from "@/features/ledger/components/node-details";
import { useBranchLabels, useHandEditsAlongPath } from "@/features/ledger/hooks/use-ledger";
import { ReadOnlyComposer } from "@/features/sharing/components/shared-banner";
import { FinishedComposer } from "@/features/studies/components/participant-bar";
import { useFeatures } from "@/features/studies/hooks/use-features";
import { GraphWhatIf } from "@/features/whatif/components/graph-whatif";
import { WorkspacePanel } from "@/features/workspace/components/workspace-panel";
import type { useCardActions } from "@/hooks/use-card-actions";
import { StepNamesContext } from "@/hooks/use-step-names";
import type { StudioFamily } from "@/hooks/use-studio-family";
import { messageOf } from "@/lib/api/client";

const NO_NODES: readonly { codes?: string[] }[] = [];

export interface StudioColumnsProps {
  family: StudioFamily;
  /** the thread on screen (the family's `displayed`, known here) */
  displayed: string;
  trajectory: Trajectory;
  actions: ReturnType<typeof useCardActions>;
  composer: ReturnType<typeof useComposer>;
  setError: (message: string | null) => void;
  /** the family's coding, and whether its drawer is open */
  coding: ReturnType<typeof useFamilyCoding> & { open: boolean; onToggle: () => void; onClose: () => void };
}

/** The family on screen: the comparison of two steps when one is picked, the workspace,
 * and beside it the path bar, the graph with its "what if", the codes, the open step's
 * details and the chat. */
export function StudioColumns({
  family,
  displayed,
  trajectory,
  actions,
  composer,
  setError,
  coding,
}: StudioColumnsProps) {
  const { view, head, access, sharing } = family;
  const { focus, nav, detailsNode, onRestore, onOpenThread } = trajectory;
  const { labels, whatif, keys } = actions;
  const { comparing } = focus;
  // a study's linear condition: the chat and the workspace, no graph
  const { graph: showGraph } = useFeatures();
  const editsByNode = useHandEditsAlongPath(family.familyRoot, view.guide);
  const laneNames = useBranchLabels(view.graph, labels);
  const onPanelError = useCallback((e: unknown) => setError(messageOf(e)), [setError]);
  const branchNames = useMemo(() => {
    const out = new Map(laneNames);
    for (const t of view.graph?.threads ?? []) if (t.name) out.set(t.thread_id, t.name);
    return out;
  }, [laneNames, view.graph]);
  const stepNames = useMemo(
    () => ({ labels, branches: branchNames, graph: view.graph }),
    [labels, branchNames, view.graph],
  );
  return (
    <StepNamesContext.Provider value={stepNames}>
      <main className={`columns ${comparing ? "comparing" : ""} ${showGraph ? "" : "linear"}`}>
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
        <fieldset className="ws-slot" hidden={comparing} disabled={!access.edit}>
          <WorkspacePanel
            key={displayed}
            thread={displayed}
            workspace={family.workspace.data}
            loading={family.workspace.isLoading}
            restoredAt={view.restoredAt}
            onError={onPanelError}
            write={family.fresh.firstWrite}
          />
        </fieldset>
        <div className="right">
          {showGraph && (
            <div className="path-row">
              <PathBar
                crumbs={nav.crumbs}
                thread={displayed}
                names={nav.threadNames}
                onJump={nav.onJump}
                onArchive={nav.archive}
              />
              <CodingButtonBar view={coding.view} open={coding.open} onToggle={coding.onToggle} />
            </div>
          )}
          {showGraph && <GraphWhatIf whatif={whatif} head={head} onError={setError} />}
          {showGraph && (
            <TrajectoryPanel
              flow={nav.shownFlow}
              details={view.details}
              rejected={view.rejected}
              pick={focus.pick}
              found={focus.found}
              headTurnId={head}
              frame={comparing ? "comparing" : ""}
              collapsed={focus.collapsed}
              onToggle={focus.onToggle}
              actions={actions.cards}
              onCompareWithHead={focus.onCompareWithHead}
              onCancelCompare={focus.onCancelCompare}
              onRestoreFound={trajectory.onRestoreFound}
              onDismissFound={focus.onDismissFound}
              onOpenThread={onOpenThread}
              onFold={nav.onFold}
              centre={nav.centre}
              loading={family.graph.isLoading}
              selection={keys.selection}
              onGraphKey={keys.onGraphKey}
              size={trajectory.size}
            />
          )}
          {showGraph && <CodeFilter nodes={view.graph?.nodes ?? NO_NODES} />}
          {showGraph && coding.open && family.familyRoot !== null && (
            <CodingPanel
              thread={family.familyRoot}
              view={coding.view}
              actions={coding.actions}
              label={(id) => labels.get(id) ?? id.slice(id.lastIndexOf(":") + 1)}
              onShowStep={trajectory.onFocusStep}
              onClose={coding.onClose}
              onError={setError}
            />
          )}
          {showGraph && detailsNode !== null && (
            <NodeDetails
              key={detailsNode}
              nodeId={detailsNode}
              label={labels.get(detailsNode) ?? detailsNode.slice(detailsNode.lastIndexOf(":") + 1)}
              title={view.current?.title ?? ""}
              branchLabels={laneNames}
              onClose={trajectory.closeDetails}
              onError={setError}
              onReplayRange={(from) => {
                // the range's end is picked on the graph: the drawer makes way for it
                trajectory.closeDetails();
                whatif.beginRange(from);
              }}
            />
          )}
          <ChatPanel
            handEdits={editsByNode}
            thread={displayed}
            turns={view.turns}
            merges={view.merges}
            guide={view.guide}
            running={composer.running}
            live={composer.live}
            busy={composer.busy}
            loading={family.messages.isLoading}
            restoredAt={view.restoredAt}
            flash={focus.flash}
            onSend={composer.onSend}
            onStop={composer.onStop}
            onRestore={onRestore}
            onOpenThread={onOpenThread}
            siblings={nav.siblings}
            onSwitch={nav.onSwitch}
            composer={
              family.participant?.state === "finished" ? (
                <FinishedComposer />
              ) : sharing.canSend ? undefined : (
                <ReadOnlyComposer sharing={sharing} thread={displayed} head={head} />
              )
            }
          />
        </div>
      </main>
    </StepNamesContext.Provider>
  );
}
