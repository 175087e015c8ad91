"use client";
import { useMemo, useRef } from "react";
import { sameShallow, type FoldedFlow } from "@/features/graph/lib/big-trees";
import { stepBefore } from "@/features/graph/lib/graph";
import type { ComparePick, Rejected } from "@/lib/research";
import type { CardActions, TrajectoryNode } from "@/features/graph/types";
import type { CardDetail } from "@/lib/studio-view";

// Every card carries a size before it is measured, so framing a card that was never
// drawn (only those in view are, on a big family) still works.
export const CARD_SIZE = { initialWidth: 208, initialHeight: 96 };

const NONE: readonly Rejected[] = [];

export interface FlowNodesInput {
  flow: FoldedFlow | null;
  details: ReadonlyMap<string, CardDetail>;
  rejected: ReadonlyMap<string, readonly Rejected[]>;
  pick: ComparePick;
  found: { nodeId: string } | null;
  selectedId: string | null;
  actions: CardActions;
  onOpenThread: (threadId: string) => void;
  onFold: (threadId: string) => void;
}

/**
 * The layout's cards as React Flow nodes. A card whose data did not
 * change keeps its data object, and a card that also kept its place keeps its node
 * object: one added node renders one card, and React Flow adopts the other 2,000 nodes
 * as they are (lib/flow-identity).
 */
export function useFlowNodes(input: FlowNodesInput): TrajectoryNode[] {
  const { flow, details, rejected, pick, found, selectedId, actions, onOpenThread, onFold } = input;
  const parents = useMemo(() => new Map((flow?.links ?? []).map((l) => [l.target, l.source] as const)), [flow]);
  const nodeCache = useRef(new Map<string, TrajectoryNode>());
  const nodes: TrajectoryNode[] = useMemo(() => {
    const previous = nodeCache.current;
    const next = new Map<string, TrajectoryNode>();
    const keep = (node: TrajectoryNode): TrajectoryNode => {
      const old = previous.get(node.id);
      let kept = node;
      if (old !== undefined && old.type === node.type && sameShallow(old.data, node.data, 2)) {
        const samePlace = old.position.x === node.position.x && old.position.y === node.position.y;
        kept = samePlace ? old : ({ ...node, data: old.data } as TrajectoryNode);
      }
      next.set(node.id, kept);
      return kept;
    };
    const built: TrajectoryNode[] = (flow?.cards ?? []).map((card) =>
      card.kind === "stub"
        ? keep({
            id: card.id,
            type: "stub",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: { card, onOpen: onOpenThread, onRename: actions.onRename },
          })
        : keep({
            id: card.id,
            type: "commit",
            position: { x: card.x, y: card.y },
            ...CARD_SIZE,
            data: {
              card,
              detail: details.get(card.id) ?? null,
              rejected: card.active ? (rejected.get(card.id) ?? NONE) : NONE,
              picked: pick.a === card.id ? "a" : pick.b === card.id ? "b" : null,
              found: found?.nodeId === card.id,
              selected: selectedId === card.id,
              actions,
              fold: card.fold,
              onFold,
              parent: stepBefore(card, parents),
            },
          }),
    );
    nodeCache.current = next;
    return built;
  }, [flow, details, rejected, pick, found, actions, onOpenThread, onFold, parents, selectedId]);
  return nodes;
}
