"use client";
import { useState } from "react";
import { useJob, useLatestStep, useProfiles, useStartReplay } from "@/features/whatif/hooks/use-whatif";
import { inStepLabels, jobActive, mergesInRange, threadOf } from "@/features/whatif/lib/whatif";
import { useStepNames } from "@/hooks/use-step-names";
import { JobProgress } from "./job-progress";
import { PathsCompare } from "./paths-compare";
import { ProfilesPanel } from "./profiles-panel";
import { messageOf } from "@/lib/api/client";

export interface ReplayDialogProps {
  /** the step the range starts at, "th_…:k", and its label */
  nodeId: string;
  label: string;
  /** the head of the path (the range's other end when "to the head") */
  headNode: string | null;
  /** the range's end, picked on the graph (then the dialog offers to change it) */
  end?: { node: string; label: string };
  /** pick the end again on the graph */
  onChangeEnd?: () => void;
  /** leave the dialog to pick the range's end on the graph */
  onPickEnd?: () => void;
  /** the profile to offer first (the branch's) */
  profileId: string;
  onClose: () => void;
  onError: (message: string) => void;
}

/** "Replay with…": pick a profile, the range's end and a number of repeats; the job's
 * progress shows while its branches appear in the graph, and each replayed branch
 * opens in the aligned comparison with one click. Profiles are managed here too. Every
 * error of the dialog (the server's refusal of a range, no free job slot, a failed
 * cancel, comparison or profile change) shows inside it, in step labels, never ids. A
 * merge step in the range carries no message to re-send: the dialog says it is skipped. */
export function ReplayDialog(props: ReplayDialogProps) {
  const { nodeId, label, headNode, end, profileId, onClose } = props;
  const names = useStepNames();
  const profiles = useProfiles();
  const { start, starting } = useStartReplay();
  const latest = useLatestStep();
  const [profile, setProfile] = useState(profileId);
  const [repeats, setRepeats] = useState(1);
  const [toHead, setToHead] = useState(false);
  const [jobId, setJobId] = useState<string | null>(null);
  const [managing, setManaging] = useState(false);
  const [compare, setCompare] = useState<{ a: string; b: string } | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const { job, cancel } = useJob(jobId);
  const thread = threadOf(nodeId);
  const to = end ? end.node : toHead && headNode ? headNode : nodeId;
  const title = end && end.node !== nodeId ? `Replay steps ${label} to ${end.label}` : `Replay from step ${label}`;
  const skipped = names.graph ? mergesInRange(names.graph, nodeId, to, names.labels) : [];
  // errors stay in the dialog (a banner behind it would not be seen)
  const onError = (message: string) => setRefused(inStepLabels(message, names.labels, names.branches));

  const run = async () => {
    setRefused(null);
    try {
      const started = await start({ thread, from: nodeId, to, profileId: profile, repeats });
      setJobId(started.id);
    } catch (err) {
      onError(messageOf(err));
    }
  };
  const openCompare = async (branch: string) => {
    try {
      setCompare({ a: to, b: await latest(branch) });
    } catch (err) {
      onError(messageOf(err));
    }
  };

  if (compare !== null) {
    return <PathsCompare thread={thread} a={compare.a} b={compare.b} onClose={() => setCompare(null)} />;
  }
  return (
    <div className="overlay" role="presentation">
      <div
        className="dialog replay-dialog"
        role="dialog"
        aria-label={title}
        data-testid="replay-dialog"
        data-from={nodeId}
        data-to={to}
      >
        <h2>{title}</h2>
        <p className="muted small">
          Each repeat is a new branch at the step before {label} that re-sends the same messages, in order, with the
          profile you pick.
        </p>
        <div className="replay-fields">
          <label>
            Profile
            <select data-testid="replay-profile" value={profile} onChange={(e) => setProfile(e.target.value)}>
              {(profiles.data ?? []).map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name} ({p.provider} · {p.model})
                </option>
              ))}
            </select>
          </label>
          {end ? (
            <div className="replay-end">
              To
              <span data-testid="replay-range">
                step {end.label}
                {props.onChangeEnd && !job && (
                  <button type="button" className="link" data-testid="replay-range-change" onClick={props.onChangeEnd}>
                    change…
                  </button>
                )}
              </span>
            </div>
          ) : (
            <label>
              To
              <select
                data-testid="replay-to"
                value={toHead ? "head" : "step"}
                onChange={(e) => {
                  if (e.target.value === "pick") props.onPickEnd?.();
                  else setToHead(e.target.value === "head");
                }}
              >
                <option value="step">this step only</option>
                <option value="head" disabled={!headNode}>
                  the head of the path
                </option>
                {props.onPickEnd && <option value="pick">a step I pick on the graph…</option>}
              </select>
            </label>
          )}
          <label>
            Repeats
            <input
              data-testid="replay-repeats"
              type="number"
              min={1}
              max={5}
              value={repeats}
              onChange={(e) => setRepeats(Math.max(1, Math.min(5, Number(e.target.value) || 1)))}
            />
          </label>
        </div>
        {skipped.length > 0 && (
          <p className="replay-skips" data-testid="replay-skips" role="note">
            {skipped.length === 1 ? `Step ${skipped[0]} brings` : `Steps ${skipped.join(", ")} bring`} in another path’s
            work, with no message of yours to re-send: a replay re-sends your messages only, so{" "}
            {skipped.length === 1 ? "it is" : "they are"} skipped, and the replayed branch does not have what{" "}
            {skipped.length === 1 ? "it" : "they"} brought in.
          </p>
        )}
        <button type="button" className="link" data-testid="profiles-open" onClick={() => setManaging(!managing)}>
          {managing ? "Hide profiles" : "Manage profiles…"}
        </button>
        {managing && <ProfilesPanel onError={onError} />}
        {refused && (
          <p className="replay-refused" data-testid="replay-error" role="alert">
            {refused}
          </p>
        )}
        {job && <JobProgress job={job} onCancel={() => void cancel().catch((err) => onError(messageOf(err)))} />}
        {job && job.thread_ids.length > 0 && !jobActive(job) && (
          <ul className="replay-branches">
            {job.thread_ids.map((t, i) => (
              <li key={t}>
                <button type="button" data-testid="replay-compare" onClick={() => void openCompare(t)}>
                  Compare paths {job.thread_ids.length > 1 ? `(replay ${i + 1})` : ""}
                </button>
              </li>
            ))}
          </ul>
        )}
        <div className="dialog-actions">
          <button type="button" data-testid="replay-close" onClick={onClose}>
            Close
          </button>
          {(!job || !jobActive(job)) && (
            <button
              type="button"
              className="primary"
              data-testid="replay-start"
              disabled={starting}
              onClick={() => void run()}
            >
              {job ? "Replay again" : `Replay ${repeats > 1 ? `${repeats}×` : ""}`}
            </button>
          )}
        </div>
      </div>
    </div>
  );
}
