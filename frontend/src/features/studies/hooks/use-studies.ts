"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { streamOf, unwrap } from "@/lib/api/client";
import { backoff } from "@/lib/events";
import { every, keys } from "@/lib/query-keys";
import { readSse } from "@/lib/sse";
import { saveFile } from "@/lib/save-file";
import { csvFileName } from "@/features/studies/lib/studies";
import type { Study, StudyCreate } from "@/features/studies/lib/types";

/** A study's page: the studies of the caller, one study, creating and closing one, its
 * participants and per-condition figures kept fresh by the study's event stream, and
 * its analysis CSV. */

export function useStudies(enabled = true) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.studies,
    enabled,
    queryFn: async () => unwrap(await client.GET("/api/studies")),
  });
}

export function useStudy(id: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.study(id ?? ""),
    enabled: id !== null,
    queryFn: async () =>
      unwrap(await client.GET("/api/studies/{study_id}", { params: { path: { study_id: id ?? "" } } })),
  });
}

export function useCreateStudy() {
  const { client } = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: StudyCreate) => unwrap(await client.POST("/api/studies", { body })),
    onSuccess: (study) => {
      qc.setQueryData(keys.study(study.id), study);
      void qc.invalidateQueries({ queryKey: keys.studies });
    },
  });
}

/** Edits a study (its owner): here, closing it to new participants or opening it again. */
export function useUpdateStudy(id: string) {
  const { client } = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: { state?: "open" | "closed"; name?: string; reveal?: boolean }) =>
      unwrap(await client.PATCH("/api/studies/{study_id}", { params: { path: { study_id: id } }, body })),
    onSuccess: (study) => {
      qc.setQueryData(keys.study(study.id), study);
      void qc.invalidateQueries({ queryKey: keys.studies });
      // a reveal: the study's families as read alone, and the codings they show
      void qc.invalidateQueries({ queryKey: keys.studyFamilies });
      void qc.invalidateQueries({ queryKey: every.coding });
    },
  });
}

export function useParticipants(id: string) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.participants(id),
    queryFn: async () =>
      unwrap(await client.GET("/api/studies/{study_id}/participants", { params: { path: { study_id: id } } })),
  });
}

export function useMetrics(id: string) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.metrics(id),
    queryFn: async () =>
      unwrap(await client.GET("/api/studies/{study_id}/metrics", { params: { path: { study_id: id } } })),
  });
}

/** The root row of a participant's family a study's reader opened (it is in neither
 * of the reader's lists): its title for the page. */
export function useStudyFamilyRow(root: string | null, enabled: boolean) {
  const { client } = useApi();
  const row = useQuery({
    queryKey: keys.studyFamily(root ?? ""),
    enabled: enabled && root !== null,
    queryFn: async () =>
      unwrap(await client.GET("/api/conversations/{thread_id}", { params: { path: { thread_id: root ?? "" } } })),
  });
  return enabled ? (row.data ?? null) : null;
}

/** Follows the study's event stream (joins, consents, finishes, every turn of its
 * families), resuming after a drop, and refreshes the participants table and the
 * figures after each burst of events. `connected` while the stream is open. */
export function useStudyEvents(id: string): { connected: boolean } {
  const { client } = useApi();
  const qc = useQueryClient();
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const abort = new AbortController();
    let lastSeq: number | null = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const refresh = () => {
      timer = null;
      void qc.invalidateQueries({ queryKey: keys.participants(id) });
      void qc.invalidateQueries({ queryKey: keys.metrics(id) });
    };
    const run = async () => {
      let attempt = 0;
      while (!abort.signal.aborted) {
        try {
          const res = await client.GET("/api/studies/{study_id}/events", {
            params: { path: { study_id: id }, query: { after: lastSeq ?? 0 } },
            headers: { Accept: "text/event-stream" },
            parseAs: "stream",
            signal: abort.signal,
          });
          if ([401, 403, 404].includes(res.response.status)) return;
          const body = streamOf(res);
          setConnected(true);
          attempt = 0;
          // what happened while the stream was down is read again once
          if (lastSeq !== null) refresh();
          for await (const event of readSse(body)) {
            if (event.id !== null && /^\d+$/.test(event.id)) lastSeq = Number(event.id);
            else {
              const seq = seqOf(event.data);
              if (seq !== null) lastSeq = seq;
            }
            if (timer === null) timer = setTimeout(refresh, 150);
          }
        } catch {
          if (abort.signal.aborted) return;
        }
        setConnected(false);
        await new Promise((r) => setTimeout(r, backoff(attempt++)));
      }
    };
    void run();
    return () => {
      abort.abort();
      if (timer !== null) clearTimeout(timer);
      setConnected(false);
    };
  }, [id, client, qc]);
  return { connected };
}

/** The serverSeq of an event's envelope, if it carries one. */
function seqOf(data: string): number | null {
  try {
    const parsed = JSON.parse(data) as { serverSeq?: unknown };
    return typeof parsed.serverSeq === "number" ? parsed.serverSeq : null;
  } catch {
    return null;
  }
}

/** Downloads the study's analysis CSV (with the client's token). */
export function useStudyExport() {
  const { client } = useApi();
  return useCallback(
    async (study: Pick<Study, "id" | "name">) => {
      const blob = unwrap(
        await client.GET("/api/studies/{study_id}/export.csv", {
          params: { path: { study_id: study.id } },
          headers: { Accept: "text/csv" },
          parseAs: "blob",
        }),
      );
      saveFile(blob, csvFileName(study.name, new Date()));
    },
    [client],
  );
}
