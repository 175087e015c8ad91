"use client";
import { useCallback, useEffect, useMemo, useState } from "react";
import { ConfirmDialog } from "@/components/confirm-dialog";
import { ErrorBanner } from "@/components/error-banner";
import { KeysOverlay } from "@/components/keys-overlay";
import { useComposer } from "@/features/chat/hooks/use-composer";
import { CodingPicker } from "@/features/coding/components/coding-picker";
import { SelectionButton } from "@/features/coding/components/selection-button";
import { CodingContext, useFamilyCoding } from "@/features/coding/hooks/use-coding";
import { useTextSelection } from "@/features/coding/hooks/use-text-selection";
import { Landing } from "@/features/conversations/components/landing";
import { StudioHeader } from "@/features/conversations/components/studio-header";
import { ArchiveToast } from "@/features/graph/components/archive-toast";
import { RestoreBanner } from "@/features/graph/components/restore-banner";
import { StepMenu } from "@/features/graph/components/step-menu";
import { useTrajectory } from "@/features/graph/hooks/use-trajectory";
import { MergeDialog } from "@/features/merge/components/merge-dialog";
import { ShareButton } from "@/features/sharing/components/share-dialog";
import { SharedBanner } from "@/features/sharing/components/shared-banner";
import { ParticipantHeader } from "@/features/studies/components/participant-bar";
import { AccessContext } from "@/hooks/use-access";
import { useCardActions } from "@/hooks/use-card-actions";
import { useConfirmDiscard } from "@/hooks/use-confirm-discard";
import { useErrorBanner } from "@/hooks/use-error-banner";
import { useStudioActions } from "@/hooks/use-studio-actions";
import { useStudioFamily } from "@/hooks/use-studio-family";
import { toField, useStudioKeys } from "@/hooks/use-studio-keys";
import { messageOf } from "@/lib/api/client";
import { whereabouts } from "@/lib/where";
import { StudioColumns } from "./studio-columns";

/** The studio page: it composes the features. The address names a family
 * (useStudioFamily); writes are useStudioActions', moving about the graph
 * useTrajectory's, what a card offers useCardActions', the keys useStudioKeys'. The
 * server's discard refusal becomes the confirm dialog. */
export function Studio() {
  const family = useStudioFamily();
  const { anchor, conversations, history, displayed, familyRoot, view, sharing, access, navigate } = family;
  const canEdit = access.edit;
  const [error, setError] = useErrorBanner(family.events.connected);
  const confirm = useConfirmDiscard();
  const { ask } = confirm;
  const act = useStudioActions({ anchor, displayed, familyRoot, setError, ask, onCheckedOut: family.clearStub });
  const trajectory = useTrajectory({ family, canEdit, checkout: act.checkout, setError });
  const { focus, wayBack, nav, onRestore } = trajectory;
  const actions = useCardActions({ family, trajectory, renameThread: act.renameThread, setError, ask });
  const { merging, keys, whatif, labels } = actions;
  const { restoredAt } = view;
  // Coding: the family's codings (blind until its owner reveals them; a study's family,
  // until the study's owner does), the picker, the text selected in a message, and the
  // coding drawer.
  const study = view.current?.study ?? null;
  const coding = useFamilyCoding({
    familyRoot,
    owner:
      study !== null
        ? study.role === "owner"
        : sharing.role === null && !sharing.viaLink && family.participant === null,
    // (null while the conversation is not known yet)
    revealed: view.current ? (view.current.reveal_codings ?? false) : null,
    canCode: (access.note || study?.role === "owner" || study?.role === "coder") && family.participant === null,
    study: study?.name ?? null,
    onError: setError,
  });
  const selection = useTextSelection(coding.view.canCode && coding.target === null);
  const [codingOpen, setCodingOpen] = useState(false);
  const { fromKeyboard } = coding;
  const graphSelection = keys.selection.nodeId;
  const codeByKey = useCallback(() => fromKeyboard(graphSelection), [fromKeyboard, graphSelection]);
  const { showKeys, setShowKeys } = useStudioKeys({
    actions,
    confirm,
    trajectory,
    canEdit,
    restored: restoredAt !== null,
    newConversation: act.newConversation,
    code: codeByKey,
    closeCoding: () => {
      if (!codingOpen) return false;
      setCodingOpen(false);
      return true;
    },
  });
  const composer = useComposer({
    displayed,
    running: act.running,
    streamed: family.events.live,
    activeTurn: history.data?.active_turn ?? null,
    refetching: history.isFetching,
    pending: family.fresh.pending,
    sendMessage: act.sendMessage,
    stop: act.stop,
  });
  const menuCard = keys.menu === null ? undefined : view.flow?.cards.find((c) => c.id === keys.menu);
  const where = useMemo(() => whereabouts(view.graph, view.flow, displayed), [view.graph, view.flow, displayed]);
  // The browser's tab is named after the conversation on screen.
  const tabTitle = anchor === null ? null : (view.current?.title ?? null);
  useEffect(() => {
    const want = tabTitle ? `${tabTitle} · HAICO studio` : "HAICO studio";
    const apply = () => {
      if (document.title !== want) document.title = want;
    };
    apply();
    // Next.js writes the page's static title once it has hydrated, which can come after
    // this effect: the title is put back whenever the head's title changes.
    const observer = new MutationObserver(apply);
    observer.observe(document.head, { subtree: true, childList: true, characterData: true });
    return () => observer.disconnect();
  }, [tabTitle]);

  return (
    <AccessContext.Provider value={access}>
      <CodingContext.Provider value={coding.view}>
        <div className="studio">
          {family.participant !== null ? (
            // a study's participant: the study, their pseudonym and Finish; no other family
            <ParticipantHeader me={family.participant} onError={setError} />
          ) : (
            <StudioHeader
              anchor={anchor}
              conversations={conversations.data}
              shared={sharing.shared}
              viaLink={sharing.viaLink}
              studies={!sharing.viaLink && !sharing.authOff}
              loading={conversations.isLoading}
              displayed={displayed}
              familyRoot={familyRoot}
              current={view.current}
              where={where}
              restoredAt={restoredAt}
              labels={labels}
              act={act}
              onOpen={(c) => {
                // a hit of an earlier search does not follow the user to another path
                focus.onDismissFound();
                void trajectory.openThread(c.thread_id);
              }}
              onArchive={(c) => void nav.archive(c.thread_id, true)}
              onSearchHit={focus.onSearchHit}
              onKeys={() => setShowKeys(true)}
              toComposer={toField("message-input")}
              share={
                familyRoot === null ? null : sharing.canShare ? (
                  <ShareButton root={familyRoot} />
                ) : sharing.authOff ? (
                  <ShareButton root={familyRoot} needsToken />
                ) : null
              }
            />
          )}
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
            <StudioColumns
              {...{ family, displayed, trajectory, actions, composer, setError }}
              coding={{
                ...coding,
                open: codingOpen,
                onToggle: () => setCodingOpen((v) => !v),
                onClose: () => setCodingOpen(false),
              }}
            />
          )}
          {menuCard && menuCard.kind === "turn" && (
            <StepMenu
              card={menuCard}
              comparing={focus.pick.a !== null && focus.pick.a !== menuCard.id}
              onRestore={onRestore}
              onCompare={focus.onCompare}
              onBringIn={actions.onBringIn}
              onShow={trajectory.onFocusStep}
              onDetails={trajectory.onDetails}
              fold={nav.shownFlow?.cards.find((c) => c.id === menuCard.id)?.fold}
              onFold={nav.onFold}
              onReplay={canEdit ? whatif.onReplay : undefined}
              replayTo={whatif.picking}
              onClose={keys.closeMenu}
            />
          )}
          <ArchiveToast archived={nav.archived} onUndo={() => void nav.undoArchive()} onDismiss={nav.dismissArchived} />
          <KeysOverlay open={showKeys} onClose={() => setShowKeys(false)} />
          <MergeDialog
            state={merging.merge}
            onMode={merging.setMode}
            onChoose={merging.choose}
            onApply={() => void merging.apply()}
            onUndo={() => void merging.undo()}
            onClose={merging.close}
          />
          <ConfirmDialog state={confirm.confirm} onCancel={confirm.dismiss} />
          <SelectionButton selection={selection} onOpen={coding.view.open} />
          <CodingPicker
            target={coding.target}
            codes={coding.view.live}
            busy={coding.applying}
            onPick={(codeId, memo) => void coding.apply(codeId, memo)}
            onClose={coding.close}
            onManage={() => {
              coding.close();
              setCodingOpen(true);
            }}
          />
        </div>
      </CodingContext.Provider>
    </AccessContext.Provider>
  );
}
