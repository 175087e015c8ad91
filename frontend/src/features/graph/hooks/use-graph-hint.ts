"use client";
import { useAccess } from "@/hooks/use-access";
import { useTouch } from "@/hooks/use-touch";
import { useFeatures } from "@/features/studies/hooks/use-features";
import { graphHint } from "@/features/graph/lib/hint";

/** The trajectory's one-line hint (lib/hint), naming only what this caller may do on
 * this device: a reader restores nothing, and a study's condition may turn restoring,
 * bringing in or the alternatives off. */
export function useGraphHint(canTryAlternatives: boolean): string {
  const touch = useTouch();
  const { edit } = useAccess();
  const features = useFeatures();
  return graphHint(edit, touch, {
    restore: features.branching,
    merge: features.merge,
    whatif: features.whatif && canTryAlternatives,
  });
}
