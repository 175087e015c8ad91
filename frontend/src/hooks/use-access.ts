"use client";
import { createContext, useContext } from "react";
import type { Access } from "@/features/sharing/lib/share-link";

/** What the studio offers on the family shown (`accessOf` the caller's role), for the
 * controls deep in the page: a viewer or commenter is never offered a write the server
 * would refuse (rename, restore, bring-in, archive, branch names, replay). */
export const AccessContext = createContext<Access>({ edit: true, note: true });

export function useAccess(): Access {
  return useContext(AccessContext);
}
