"use client";
import { useMemo } from "react";
import { useCodingView } from "@/features/coding/hooks/use-coding";
import { DEFAULT_COLOUR, type Coding, type CodingField } from "@/features/coding/lib/codings";
import { segments } from "@/features/coding/lib/offsets";

/** A message's text with its coded spans highlighted (overlaps darker), in the code's
 * colour; the element carries the field and the node, for a selection to be coded. */
export function CodedText({ nodeId, field, text }: { nodeId: string; field: CodingField; text: string }) {
  const { byNode, codes } = useCodingView();
  const mine = byNode.get(nodeId);
  const pieces = useMemo(() => {
    const spans = (mine ?? [])
      .filter((c) => c.span?.field === field)
      .map((c) => ({ start: c.span?.start ?? 0, end: c.span?.end ?? 0, item: c }));
    return segments<Coding>(text, spans);
  }, [mine, field, text]);
  return (
    <div className="text" data-coding-field={nodeId ? field : undefined} data-node-id={nodeId || undefined}>
      {pieces.map((p, i) => {
        if (p.items.length === 0) return p.text;
        const first = p.items[0] as Coding;
        const colour = codes.get(first.code_id)?.color ?? DEFAULT_COLOUR;
        const names = p.items.map((c) => codes.get(c.code_id)?.name ?? `code ${c.code_id}`);
        return (
          <mark
            key={i}
            className={`coded ${p.items.length > 1 ? "coded-many" : ""}`}
            style={{ ["--code" as string]: colour }}
            data-coding-ids={p.items.map((c) => c.id).join(" ")}
            title={`Coded: ${names.join(", ")}`}
          >
            {p.text}
          </mark>
        );
      })}
    </div>
  );
}
