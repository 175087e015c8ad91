"use client";
import { createContext, useContext } from "react";
import { ALL_FEATURES } from "@/features/studies/lib/studies";
import type { Features, Me } from "@/features/studies/lib/types";

/** The interface features the studio shows on the family on screen: everything, but
 * for a study's participant what their condition allows (the graph, restoring, merge,
 * what if). The server refuses the rest; the studio does not offer it. */
export const FeaturesContext = createContext<Features>(ALL_FEATURES);

export function useFeatures(): Features {
  return useContext(FeaturesContext);
}

/** The study's participant the tab acts as (null: the studio's own user). */
export const ParticipantContext = createContext<Me | null>(null);

export function useParticipantMe(): Me | null {
  return useContext(ParticipantContext);
}
