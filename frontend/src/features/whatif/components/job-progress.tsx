"use client";
import { jobActive, jobCaption, jobPercent, type Job } from "@/features/whatif/lib/whatif";

export interface JobProgressProps {
  job: Job;
  onCancel: () => void;
}

/** A replay job's progress bar, its caption, and Cancel while it runs. */
export function JobProgress({ job, onCancel }: JobProgressProps) {
  const percent = jobPercent(job);
  return (
    <div className="job-progress" data-testid="job-progress" data-state={job.state} data-job-id={job.id}>
      <div
        className="job-bar"
        role="progressbar"
        aria-label="Replay progress"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
      >
        <span className={`job-fill job-${job.state}`} style={{ width: `${percent}%` }} />
      </div>
      <span className="job-caption muted small" data-testid="job-caption">
        {jobCaption(job)}
      </span>
      {jobActive(job) && (
        <button type="button" className="link" data-testid="job-cancel" onClick={onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}
