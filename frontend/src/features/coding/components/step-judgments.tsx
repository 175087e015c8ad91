"use client";
import { useJudgments } from "@/features/coding/hooks/use-coding-data";
import { judgmentText, judgmentsOf } from "@/features/coding/lib/judgments";
import { useStepNames } from "@/hooks/use-step-names";

/** The "which is better" judgments that name a step, in its details. */
export function StepJudgments({ nodeId }: { nodeId: string }) {
  const thread = nodeId.slice(0, nodeId.lastIndexOf(":"));
  const judgments = useJudgments(thread);
  const { labels } = useStepNames();
  const mine = judgmentsOf(judgments.data ?? [], nodeId);
  if (mine.length === 0) return null;
  const label = (id: string) => labels.get(id) ?? id.slice(id.lastIndexOf(":") + 1);
  return (
    <section>
      <h4>Which is better</h4>
      <ul className="judgments">
        {mine.map((j) => (
          <li key={j.id} data-testid="judgment-item" data-judgment-id={j.id}>
            {judgmentText(j, label)} <span className="muted small">— {j.judge}</span>
            {j.rationale && <div className="small">{j.rationale}</div>}
          </li>
        ))}
      </ul>
    </section>
  );
}
