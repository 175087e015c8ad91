"use client";
import { useRouter, useSearchParams } from "next/navigation";
import { useCallback, useEffect, useMemo, useState } from "react";
import { useNewConversation } from "@/features/conversations/hooks/use-new-conversation";
import { useSharing, withShared } from "@/features/sharing/hooks/use-sharing";
import { accessOf } from "@/features/sharing/lib/share-link";
import { useParticipantMe } from "@/features/studies/hooks/use-features";
import { STUDY_VIEW, asStudyReader, participantFamilyUrl } from "@/features/studies/lib/studies";
import { useStudyFamilyRow } from "@/features/studies/hooks/use-studies";
import type { Conversation } from "@/lib/api/client";
import { useFamilyEvents } from "./use-family-events";
import { useConversations, useGraph, useHistory, useMessages, useWorkspace } from "./use-studio-data";
import { useStudioView } from "./use-studio-view";

export type StudioFamily = ReturnType<typeof useStudioFamily>;

/**
 * The family the address names (`?thread=`), as the page shows it: the studio shows the
 * family's working thread and follows its head, as every client does, or a path of it
 * asked for (`showThread`) that owns no turn yet or that a reader opened. What the
 * server says of it (history, graph, transcript, workspace, its event stream), what the
 * caller may do with it (`access`), and the views derived from it (useStudioView).
 */
export function useStudioFamily() {
  const params = useSearchParams();
  const router = useRouter();
  const anchor = params.get("thread");

  const conversations = useConversations();
  // A conversation not created yet (its first send or edit creates it) reads nothing.
  const requestedNew = params.get("new") === "1";
  const fresh = useNewConversation({ anchor, requested: requestedNew, conversations: conversations.data });
  const { pending, settle } = fresh;
  const history = useHistory(pending ? null : anchor);
  // A path that owns no turn yet is shown on request; it becomes the working thread on send.
  const [stub, setStub] = useState<string | null>(null);
  const working = history.data?.working_thread_id ?? null;
  const head = history.data?.head_turn_id ?? null;
  const familyRoot = history.data?.root_thread_id ?? null;
  useEffect(() => setStub(null), [working, head]);
  // (while a conversation just created loads, its id stays on screen)
  const displayed = pending ? anchor : (stub ?? working ?? (requestedNew ? anchor : null));
  const loaded = history.data !== undefined;
  useEffect(() => settle(loaded), [settle, loaded]);
  const clearStub = useCallback(() => setStub(null), []);

  const stored = pending ? null : displayed;
  const graph = useGraph(stored);
  const messages = useMessages(stored);
  const workspace = useWorkspace(stored);
  // The event stream starts where the history was read: nothing replayed, nothing missed.
  const events = useFamilyEvents(pending ? null : anchor, history.data ? (history.data.server_seq ?? 0) : null);
  // A participant's family opened from a study's page (`&view=study`) is read, as a
  // viewer's: it is neither the reader's nor shared with them.
  const studyReader = params.get("view") === STUDY_VIEW;
  const shared = useSharing(familyRoot);
  const sharing = studyReader ? asStudyReader(shared) : shared;
  const readerRow = useStudyFamilyRow(familyRoot, studyReader);
  const listed = useMemo(
    () => withShared<Conversation>(conversations.data, readerRow ? [...sharing.shared, readerRow] : sharing.shared),
    [conversations.data, sharing.shared, readerRow],
  );
  // What the page offers: a viewer or commenter of a shared family gets no write control
  // (the server would refuse it), and opens other paths without moving the shared head.
  // A study's participant who finished reads their family and writes nothing more.
  const participant = useParticipantMe();
  const finished = participant?.state === "finished";
  const access = useMemo(
    () => (finished ? { edit: false, note: false } : accessOf(sharing.role)),
    [finished, sharing.role],
  );
  const view = useStudioView({
    conversations: listed,
    graph: graph.data,
    messages: messages.data,
    workspace: workspace.data,
    head,
    displayed,
    anchor,
  });
  const navigate = useCallback(
    (thread: string | null) => {
      if (thread !== anchor)
        router.push(thread ? (studyReader ? participantFamilyUrl(thread) : `/?thread=${thread}`) : "/");
    },
    [anchor, router, studyReader],
  );

  return {
    anchor,
    conversations,
    fresh,
    history,
    working,
    head,
    familyRoot,
    displayed,
    /** shows a path of the family without checking anything out (null: the working one) */
    showThread: setStub,
    clearStub,
    graph,
    messages,
    workspace,
    events,
    sharing,
    access,
    /** the study's participant the tab acts as (null: the studio's own user) */
    participant,
    view,
    navigate,
  };
}
