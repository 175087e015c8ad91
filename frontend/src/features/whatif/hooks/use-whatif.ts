"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "@/hooks/use-api";
import { unwrap, type Client } from "@/lib/api/client";
import { every, keys } from "@/lib/query-keys";
import { jobActive, laterJob, type Job } from "@/features/whatif/lib/whatif";
import type { components } from "@/lib/api/schema";

type ProfileIn = components["schemas"]["ProfileIn"];

/** `default` and the caller's model profiles. */
export function useProfiles() {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.profiles,
    queryFn: async () => unwrap(await client.GET("/api/profiles")),
  });
}

/** Create and delete profiles; both refresh the list. */
export function useProfileActions() {
  const { client } = useApi();
  const qc = useQueryClient();
  const refresh = () => qc.invalidateQueries({ queryKey: every.whatif });
  const create = useMutation({
    mutationFn: async (body: ProfileIn) => unwrap(await client.POST("/api/profiles", { body })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async (id: string) => {
      const r = await client.DELETE("/api/profiles/{profile_id}", { params: { path: { profile_id: id } } });
      if (r.error !== undefined) unwrap(r);
    },
    onSuccess: refresh,
  });
  return { create: create.mutateAsync, remove: remove.mutateAsync, saving: create.isPending };
}

/** The query of a branch's profile id (its conversation's `profile_id`). */
export function branchProfileQuery(client: Client, thread: string) {
  return {
    queryKey: keys.branchProfile(thread),
    queryFn: async () =>
      unwrap(await client.GET("/api/conversations/{thread_id}", { params: { path: { thread_id: thread } } }))
        .profile_id,
  };
}

/** A branch's profile, and setting it (`PATCH …/{thread_id} {profile_id}`). */
export function useBranchProfile(thread: string) {
  const { client } = useApi();
  const qc = useQueryClient();
  const query = useQuery(branchProfileQuery(client, thread));
  const set = useMutation({
    mutationFn: async (profileId: string) =>
      unwrap(
        await client.PATCH("/api/conversations/{thread_id}", {
          params: { path: { thread_id: thread } },
          body: { profile_id: profileId },
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.branchProfile(thread) }),
  });
  return { profileId: query.data ?? "default", setProfile: set.mutateAsync };
}

export interface ReplayRequest {
  thread: string;
  from: string;
  to: string;
  profileId: string;
  repeats: number;
}

/** Start a replay job (202); its branches arrive through the family's event stream. */
export function useStartReplay() {
  const { client } = useApi();
  const m = useMutation({
    mutationFn: async (r: ReplayRequest) =>
      unwrap(
        await client.POST("/api/conversations/{thread_id}/replay", {
          params: { path: { thread_id: r.thread } },
          body: { from_node: r.from, to_node: r.to, profile_id: r.profileId, repeats: r.repeats },
        }),
      ),
  });
  return { start: m.mutateAsync, starting: m.isPending };
}

/** A job, polled while it runs; cancelling it answers the ended job. */
export function useJob(id: string | null) {
  const { client } = useApi();
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: keys.job(id ?? ""),
    enabled: id !== null,
    queryFn: async () => {
      const fetched = unwrap(await client.GET("/api/jobs/{job_id}", { params: { path: { job_id: id ?? "" } } }));
      // (the stream may have reported more while this answer was on its way)
      return laterJob(qc.getQueryData<Job>(keys.job(id ?? "")), fetched);
    },
    // The family's event stream updates it (`haico/jobProgress`); polled slowly too,
    // for a job whose family the studio is not following.
    refetchInterval: (q) => (jobActive(q.state.data as Job | undefined) ? 2000 : false),
  });
  const cancel = useMutation({
    mutationFn: async () =>
      unwrap(await client.POST("/api/jobs/{job_id}/cancel", { params: { path: { job_id: id ?? "" } } })),
    onSuccess: (job) => qc.setQueryData<Job>(keys.job(job.id), (known) => laterJob(known, job)),
  });
  return { job: query.data ?? null, cancel: cancel.mutateAsync };
}

/** The aligned comparison of the paths to `a` and `b`. */
export function useComparePaths(thread: string, a: string | null, b: string | null) {
  const { client } = useApi();
  return useQuery({
    queryKey: keys.comparePaths(a ?? "", b ?? ""),
    enabled: a !== null && b !== null,
    queryFn: async () =>
      unwrap(
        await client.GET("/api/conversations/{thread_id}/compare-paths", {
          params: { path: { thread_id: thread }, query: { a: a ?? "", b: b ?? "" } },
        }),
      ),
  });
}

/** The latest step of a thread (a replayed branch's end), read once. */
export function useLatestStep() {
  const { client } = useApi();
  return async (thread: string): Promise<string> => {
    const conv = unwrap(
      await client.GET("/api/conversations/{thread_id}", { params: { path: { thread_id: thread } } }),
    );
    return `${thread}:${conv.turn_index}`;
  };
}

/** The family's head (the end of the path the researcher is on), for "to the head". */
export function useHeadNode(thread: string) {
  const { client } = useApi();
  const q = useQuery({
    queryKey: [...every.whatif, "head", thread],
    queryFn: async () =>
      unwrap(await client.GET("/api/conversations/{thread_id}/history", { params: { path: { thread_id: thread } } }))
        .head_turn_id ?? null,
  });
  return q.data ?? null;
}
