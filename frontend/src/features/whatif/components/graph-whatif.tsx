"use client";
import type { GraphWhatIf as State } from "@/features/whatif/hooks/use-graph-whatif";
import { useState } from "react";
import { useBranchProfile, useJob, useLatestStep } from "@/features/whatif/hooks/use-whatif";
import { ALTERNATIVES, jobActive, threadOf } from "@/features/whatif/lib/whatif";
import { JobProgress } from "./job-progress";
import { PathsCompare } from "./paths-compare";
import { ReplayDialog } from "./replay-dialog";
import { messageOf } from "@/lib/api/client";

export interface GraphWhatIfProps {
  whatif: State;
  /** the family's head: "to the head" ends the range there */
  head: string | null;
  onError: (message: string) => void;
}

/** Above the graph: the bar of a replay's range being picked, the "Replay with…"
 * dialog of the picked range, and the progress of the last "Try N alternatives". */
export function GraphWhatIf({ whatif, head, onError }: GraphWhatIfProps) {
  const { range, alternatives } = whatif;
  return (
    <>
      {range !== null && range.to === null && (
        <div className="replay-range-bar" data-testid="replay-range-bar" data-from={range.from} role="status">
          <span className="replay-range-text">
            <strong>Replay from step {whatif.label(range.from)}</strong> to: click the range’s last step on the graph,
            or
          </span>
          <button
            type="button"
            className="small-btn"
            data-testid="replay-range-head"
            disabled={head === null}
            onClick={() => head !== null && whatif.pickEnd(head)}
          >
            the head
          </button>
          <button
            type="button"
            className="small-btn"
            data-testid="replay-range-one"
            onClick={() => whatif.pickEnd(range.from)}
          >
            this step only
          </button>
          <button type="button" className="small-btn" data-testid="replay-range-cancel" onClick={whatif.closeRange}>
            cancel
          </button>
          {/* the start's card is outlined (the cards know nothing of ranges; node ids are word characters and ':') */}
          {/^[\w:-]+$/.test(range.from) && (
            <style>{`.card[data-node-id="${range.from}"] { outline: 3px dashed #2563eb; outline-offset: 2px; }`}</style>
          )}
          {range.error && (
            <p className="replay-range-error" data-testid="replay-range-error" role="alert">
              {range.error}
            </p>
          )}
        </div>
      )}
      {range !== null && range.to !== null && (
        <RangeDialog
          from={range.from}
          to={range.to}
          label={whatif.label}
          onChangeEnd={whatif.repick}
          onClose={whatif.closeRange}
          onError={onError}
        />
      )}
      {alternatives !== null && (
        <AlternativesProgress
          key={alternatives.jobId}
          jobId={alternatives.jobId}
          nodeId={alternatives.nodeId}
          label={whatif.label(alternatives.nodeId)}
          onClose={whatif.closeAlternatives}
          onError={onError}
        />
      )}
    </>
  );
}

function RangeDialog(props: {
  from: string;
  to: string;
  label: (node: string) => string;
  onChangeEnd: () => void;
  onClose: () => void;
  onError: (message: string) => void;
}) {
  const { profileId } = useBranchProfile(threadOf(props.from));
  return (
    <ReplayDialog
      nodeId={props.from}
      label={props.label(props.from)}
      headNode={null}
      end={{ node: props.to, label: props.label(props.to) }}
      onChangeEnd={props.onChangeEnd}
      profileId={profileId}
      onClose={props.onClose}
      onError={props.onError}
    />
  );
}

/** The progress of "Try N alternatives", and once it is over, each alternative
 * compared with the step it re-answered (the aligned paths, one click each). */
function AlternativesProgress(props: {
  jobId: string;
  nodeId: string;
  label: string;
  onClose: () => void;
  onError: (message: string) => void;
}) {
  const { job, cancel } = useJob(props.jobId);
  const latest = useLatestStep();
  const [compare, setCompare] = useState<string | null>(null);
  const openCompare = async (branch: string) => {
    try {
      setCompare(await latest(branch));
    } catch (err) {
      props.onError(messageOf(err));
    }
  };
  return (
    <div className="alternatives-progress" data-testid="alternatives-progress" data-job-id={props.jobId}>
      <span className="small">
        {ALTERNATIVES} alternatives of step {props.label}
      </span>
      {job && <JobProgress job={job} onCancel={() => void cancel().catch((err) => props.onError(messageOf(err)))} />}
      {job &&
        !jobActive(job) &&
        job.thread_ids.map((t, i) => (
          <button
            key={t}
            type="button"
            className="small-btn"
            data-testid="alternatives-compare"
            data-thread-id={t}
            title={`Compare alternative ${i + 1} with step ${props.label}, step by step`}
            onClick={() => void openCompare(t)}
          >
            compare {i + 1}
          </button>
        ))}
      {compare !== null && (
        <PathsCompare thread={threadOf(props.nodeId)} a={props.nodeId} b={compare} onClose={() => setCompare(null)} />
      )}
      {(!job || !jobActive(job)) && (
        <button
          type="button"
          className="icon"
          data-testid="alternatives-close"
          aria-label="Dismiss the alternatives' progress"
          onClick={props.onClose}
        >
          ✕
        </button>
      )}
    </div>
  );
}
