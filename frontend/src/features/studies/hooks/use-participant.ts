"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { ApiError, browserTokenStore, makeClient, messageOf, unwrap } from "@/lib/api/client";
import { keys } from "@/lib/query-keys";
import {
  dropPendingJoin,
  enterAsParticipant,
  isParticipantToken,
  recallJoin,
  rememberJoin,
} from "@/features/studies/lib/participant";
import { studyErrorText } from "@/features/studies/lib/studies";

/** The studio as a study's participant sees it: who they are, their study and
 * condition, their state (`GET /api/studies/participants/me`), and consenting and
 * finishing. Null `me` when the tab does not act as a participant. */
export function useParticipant() {
  const { client, tokens } = useApi();
  const qc = useQueryClient();
  const active = isParticipantToken(tokens.get());
  const me = useQuery({
    queryKey: keys.me,
    enabled: active,
    queryFn: async () => unwrap(await client.GET("/api/studies/participants/me")),
  });
  const consent = useMutation({
    mutationFn: async () => {
      unwrap(await client.POST("/api/studies/participants/me/consent"));
    },
    onSettled: () => qc.invalidateQueries({ queryKey: keys.me }),
  });
  const finish = useMutation({
    mutationFn: async () => {
      unwrap(await client.POST("/api/studies/participants/me/finish"));
    },
    onSettled: () => qc.invalidateQueries({ queryKey: keys.me }),
  });
  return {
    active,
    me: active ? (me.data ?? null) : null,
    loading: active && me.isPending,
    error: me.error,
    consent,
    finish,
  };
}

export type Participant = ReturnType<typeof useParticipant>;

export type JoinState = { kind: "joining" } | { kind: "joined"; thread: string } | { kind: "failed"; message: string };

/** Joins the study whose token the tab brought (once: a join made before from this
 * browser is recalled, not made again), then the tab acts as the participant. The join
 * is sent with no other credential. */
export function useJoin(studyToken: string): JoinState {
  const [state, setState] = useState<JoinState>({ kind: "joining" });
  // a client with no token at all: a join carries only the study's token
  const anonymous = useMemo(() => makeClient(browserTokenStore(null)), []);
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    const local = window.localStorage;
    const session = window.sessionStorage;
    const known = recallJoin(local, studyToken);
    if (known !== null) {
      enterAsParticipant(session, known.token);
      setState({ kind: "joined", thread: known.thread_id });
      return;
    }
    void (async () => {
      try {
        const answer = unwrap(await anonymous.POST("/api/studies/join", { body: { token: studyToken } }));
        const kept = rememberJoin(local, studyToken, answer);
        enterAsParticipant(session, kept.token);
        setState({ kind: "joined", thread: kept.thread_id });
      } catch (e) {
        dropPendingJoin(session);
        setState({
          kind: "failed",
          message: e instanceof ApiError ? studyErrorText(e.code, e.message) : messageOf(e),
        });
      }
    })();
  }, [anonymous, studyToken]);
  return state;
}
