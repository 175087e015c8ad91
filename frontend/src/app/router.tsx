"use client";
import { useSearchParams } from "next/navigation";
import { useCallback, useState } from "react";
import { JoinPage } from "@/features/studies/components/join-page";
import { ParticipantGate } from "@/features/studies/components/participant-gate";
import { StudiesPage, StudyPage } from "@/features/studies/components/study-page";
import { pendingJoin } from "@/features/studies/lib/participant";
import { Studio } from "./studio";

/** The page's routes, by query parameter: a study's join link (`?join=st_…`, kept for
 * the tab before the address bar drops it) joins first; `?studies` lists the caller's
 * studies, `?study=<id>` is one study's page; anything else is the studio, as a
 * study's participant sees it when the tab acts as one. */
export function Router() {
  const params = useSearchParams();
  const [joining, setJoining] = useState(() =>
    typeof window === "undefined" ? null : pendingJoin(window.sessionStorage),
  );
  const joined = useCallback(() => setJoining(null), []);
  if (joining !== null) return <JoinPage token={joining} onDone={joined} />;
  const study = params.get("study");
  if (study) return <StudyPage id={study} />;
  if (params.has("studies")) return <StudiesPage />;
  return (
    <ParticipantGate>
      <Studio />
    </ParticipantGate>
  );
}
