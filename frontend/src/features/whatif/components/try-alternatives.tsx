"use client";
import { useState } from "react";
import { useBranchProfile, useJob, useStartReplay } from "@/features/whatif/hooks/use-whatif";
import { ALTERNATIVES } from "@/features/whatif/lib/whatif";
import { JobProgress } from "./job-progress";
import { messageOf } from "@/lib/api/client";

/** "Try 3 alternatives" of one step, in one click: a one-step replay with three
 * repeats (three sibling answers to the step's message, with its branch's profile);
 * its progress shows beside the button, and the answers appear in the graph. */
export function TryAlternatives({ nodeId }: { nodeId: string }) {
  const thread = nodeId.slice(0, nodeId.lastIndexOf(":"));
  const { profileId } = useBranchProfile(thread);
  const { start, starting } = useStartReplay();
  const [jobId, setJobId] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { job, cancel } = useJob(jobId);
  const run = async () => {
    setError(null);
    try {
      setJobId((await start({ thread, from: nodeId, to: nodeId, profileId, repeats: ALTERNATIVES })).id);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <>
      <button type="button" data-testid="try-alternatives" disabled={starting} onClick={() => void run()}>
        Try {ALTERNATIVES} alternatives
      </button>
      {job && <JobProgress job={job} onCancel={() => void cancel().catch((err) => setError(messageOf(err)))} />}
      {error && (
        <p className="muted small" role="alert">
          {error}
        </p>
      )}
    </>
  );
}
