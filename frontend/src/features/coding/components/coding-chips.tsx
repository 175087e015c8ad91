"use client";
import { useCodingView } from "@/features/coding/hooks/use-coding";

/** The codes applied at a step (its codings the caller sees), as chips on its card. */
export function CodingChips({ nodeId }: { nodeId: string }) {
  const { chips, blindForMe } = useCodingView();
  const names = chips.get(nodeId);
  if (!names || names.length === 0) return null;
  const shown = names.slice(0, 3);
  return (
    <div
      className="code-chips coding-chips"
      data-testid="coding-chips"
      title={`${blindForMe ? "Your codings" : "Codings"}: ${names.join(", ")}`}
    >
      {shown.map((n) => (
        <span key={n} className="code-chip coding-chip" data-testid="coding-chip">
          {n}
        </span>
      ))}
      {names.length > shown.length && <span className="code-chip more">+{names.length - shown.length}</span>}
    </div>
  );
}
