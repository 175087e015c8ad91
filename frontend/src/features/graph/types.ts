import type { Node, useStoreApi } from "@xyflow/react";
import type { Fold } from "@/features/graph/lib/big-trees";
import type { FlowCard } from "@/features/graph/lib/graph";
import type { CardDetail } from "@/lib/studio-view";
import type { Rejected } from "@/lib/research";

/** What every card can do besides showing itself (the page hands these to the graph). */
export interface CardActions {
  onRestore: (nodeId: string) => void;
  /** a click: selects the step and shows it in the chat */
  onFocusStep: (nodeId: string) => void;
  /** opens the step's details (the drawer) */
  onDetails: (nodeId: string) => void;
  onCompare: (nodeId: string) => void;
  /** opens the preview of bringing this step's work into the current path */
  onBringIn: (nodeId: string) => void;
  /** saves a thread's branch name (null clears it); rejects with the server's error */
  onRename: (threadId: string, name: string | null) => Promise<void>;
  /** opens the step's menu (a long press on the card) */
  onMenu?: (nodeId: string) => void;
  /** "Try N alternatives" of the step, in one click (a one-step replay with N repeats) */
  onTryAlternatives?: (nodeId: string) => void;
}

/** What a commit card draws (a React Flow node's data). */
export interface CommitData extends Record<string, unknown> {
  card: FlowCard;
  detail: CardDetail | null;
  /** the decisions rejected at this step (displayed path only) */
  rejected: readonly Rejected[];
  /** picked for a comparison: the before ("a") or after ("b") side */
  picked: "a" | "b" | null;
  /** the step a search hit points at */
  found: boolean;
  /** the step the keyboard selection is on */
  selected?: boolean;
  actions: CardActions;
  /** on a branch's first card: whether the branch is folded, and how much that hides */
  fold: Fold | null;
  onFold: (threadId: string) => void;
  /** the step before this one (`thread:0`, the baseline, for a first step): the hover
   * preview shows what this step changed since */
  parent: string;
}

export interface StubData extends Record<string, unknown> {
  card: FlowCard;
  onOpen: (threadId: string) => void;
  onRename: CardActions["onRename"];
}

export type CommitNode = Node<CommitData, "commit">;
export type StubNode = Node<StubData, "stub">;
export type TrajectoryNode = CommitNode | StubNode;

/** React Flow's store of the trajectory (the flow is uncontrolled: it holds the nodes). */
export type FlowStore = ReturnType<typeof useStoreApi>;
