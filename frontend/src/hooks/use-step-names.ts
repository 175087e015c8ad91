"use client";
import { createContext, useContext } from "react";
import type { Graph } from "@/features/graph/lib/graph";

/** How the studio names the family's steps and paths, for the dialogs deep in the page
 * (replay, compare paths) that show a server's node ids: `labels` node id → step label
 * ("3.1"), `branches` thread id → a path's name ("main", "from 3.1" or its own name),
 * `graph` the family (for what a range of steps holds). */
export interface StepNames {
  labels: ReadonlyMap<string, string>;
  branches: ReadonlyMap<string, string>;
  graph: Graph | undefined;
}

const NONE: StepNames = { labels: new Map(), branches: new Map(), graph: undefined };

export const StepNamesContext = createContext<StepNames>(NONE);

export function useStepNames(): StepNames {
  return useContext(StepNamesContext);
}
