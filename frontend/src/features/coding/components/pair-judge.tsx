"use client";
import { areSiblings } from "@/features/coding/lib/judgments";
import { useStepNames } from "@/hooks/use-step-names";
import { JudgeButton } from "./judge-button";

/** "Which is better?" on a pair of picked cards, when they are siblings. */
export function PairJudge({ a, b }: { a: string; b: string }) {
  const { graph } = useStepNames();
  if (!graph || !areSiblings(graph.edges, a, b)) return null;
  return <JudgeButton nodeId={a} siblings={[a, b]} />;
}
