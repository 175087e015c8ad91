/**
 * A study as the owner's page handles it: the create form's draft and the request it
 * becomes (or what is wrong with it), the join link, and how the participants table
 * and the per-condition figures read. Pure.
 */
import type { Features, Figure, ParticipantRow, StudyCreate } from "./types";

export const ALL_FEATURES: Features = { graph: true, branching: true, merge: true, whatif: true };

/** The switches of a condition, in the order the form shows them, with their words. */
export const FEATURE_SWITCHES: readonly { key: keyof Features; label: string; hint: string }[] = [
  { key: "graph", label: "Graph", hint: "the trajectory panel, step switching and the other paths" },
  { key: "branching", label: "Branching", hint: "restoring an earlier step and continuing from it" },
  { key: "merge", label: "Merge", hint: "bringing a step's work into the current path" },
  { key: "whatif", label: "What if", hint: "replays and alternatives" },
];

/** A condition with no graph is linear: no restore either (the form keeps them together). */
export function withSwitch(features: Features, key: keyof Features, on: boolean): Features {
  const next = { ...features, [key]: on };
  if (key === "graph" && !on) next.branching = false;
  if (key === "branching" && on) next.graph = true;
  return next;
}

/** A short name of what a condition allows ("linear chat", "everything", "graph, branching"). */
export function featuresText(f: Features): string {
  const on = FEATURE_SWITCHES.filter((s) => f[s.key]).map((s) => s.label.toLowerCase());
  if (on.length === FEATURE_SWITCHES.length) return "everything";
  if (!f.graph && !f.branching) return on.length === 0 ? "linear chat" : `linear chat, ${on.join(", ")}`;
  return on.join(", ");
}

export interface ConditionDraft {
  name: string;
  profileId: string;
  features: Features;
}

export interface StudyDraft {
  name: string;
  description: string;
  objective: string;
  documentTitle: string;
  documentContent: string;
  /** one preference a line */
  preferences: string;
  /** one to-do a line */
  todos: string;
  consent: string;
  /** the id of one of the researcher's codebooks, for the study's coders ("": none) */
  codebookId: string;
  conditions: ConditionDraft[];
}

export function emptyDraft(): StudyDraft {
  return {
    name: "",
    description: "",
    objective: "",
    documentTitle: "",
    documentContent: "",
    preferences: "",
    todos: "",
    consent: "",
    codebookId: "",
    conditions: [
      { name: "Branching", profileId: "", features: { ...ALL_FEATURES } },
      { name: "Linear", profileId: "", features: { graph: false, branching: false, merge: false, whatif: false } },
    ],
  };
}

/** The non-empty lines of a text area, trimmed. */
export function lines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/** What keeps the draft from being sent (null: nothing). */
export function draftProblem(d: StudyDraft): string | null {
  if (!d.name.trim()) return "Give the study a name.";
  if (d.conditions.length === 0) return "A study needs at least one condition.";
  const names = d.conditions.map((c) => c.name.trim());
  if (names.some((n) => n === "")) return "Give every condition a name.";
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) return `Two conditions are named “${n}”: condition names must differ.`;
    seen.add(n);
  }
  if (d.documentContent.trim() && !d.documentTitle.trim()) return "Give the starting document a title.";
  return null;
}

/** The request a draft becomes (`POST /api/studies`); empty fields are left out (the
 * description is sent as it is, empty or not). */
export function draftBody(d: StudyDraft): StudyCreate {
  const task: StudyCreate["task"] = {};
  if (d.objective.trim()) task.objective = d.objective.trim();
  if (d.documentTitle.trim()) task.document = { title: d.documentTitle.trim(), content: d.documentContent };
  const preferences = lines(d.preferences);
  if (preferences.length > 0) task.preferences = preferences;
  const todos = lines(d.todos);
  if (todos.length > 0) task.todos = todos;
  const body: StudyCreate = {
    name: d.name.trim(),
    description: d.description.trim(),
    task,
    conditions: d.conditions.map((c) => ({
      name: c.name.trim(),
      features: { ...c.features },
      ...(c.profileId ? { profile_id: c.profileId } : {}),
    })),
  };
  if (d.consent.trim()) body.consent = d.consent.trim();
  if (d.codebookId !== "") body.codebook_id = Number(d.codebookId);
  return body;
}

/** The address a participant opens: the studio's join page with the study's token. */
export function joinUrl(origin: string, joinToken: string): string {
  return `${origin}/?${new URLSearchParams({ join: joinToken }).toString()}`;
}

/** The query a study's reader opens a participant's family with: read-only, named as
 * a participant's (the family is neither theirs nor shared with them). */
export const STUDY_VIEW = "study";

/** The address of a participant's family as the study page opens it. */
export function participantFamilyUrl(threadId: string): string {
  return `/?${new URLSearchParams({ thread: threadId, view: STUDY_VIEW }).toString()}`;
}

/** What the studio offers on a participant's family opened from the study page: the
 * reader's role (a viewer, unless a share says more), no composer, no sharing. */
export function asStudyReader<
  T extends { role: string | null; owner: string | null; canSend: boolean; canShare: boolean },
>(sharing: T): T {
  return {
    ...sharing,
    role: sharing.role ?? "viewer",
    owner: sharing.owner ?? "A study participant",
    canSend: false,
    canShare: false,
    // (a family also shared with the reader keeps the share's words: they say more)
    ...(sharing.role === null ? { study: true } : {}),
  };
}

/** A mean or median as the figures show it: whole numbers bare, others to one decimal. */
export function figureNumber(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** "mean 2.5 · median 2" */
export function figureText(f: Figure | undefined): string {
  return `${figureNumber(f?.mean)} / ${figureNumber(f?.median)}`;
}

/** Seconds as "4 min 05 s" (or "42 s"). */
export function durationText(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, "0")} s`;
}

/** How long ago `iso` was, from `now` (ms), in a few words. */
export function agoText(iso: string | null, now: number): string {
  if (iso === null) return "never";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "–";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 10) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

export const STATE_TEXT: Record<ParticipantRow["state"], string> = {
  joined: "joined",
  consented: "working",
  finished: "finished",
};

/** The participants in join order (P001, P002, …), the order the table keeps. */
export function inJoinOrder(rows: readonly ParticipantRow[]): ParticipantRow[] {
  return [...rows].sort((a, b) => a.participant.localeCompare(b.participant, undefined, { numeric: true }));
}

/** The file name a study's CSV is saved under: its name, made safe, and the date. */
export function csvFileName(studyName: string, now: Date): string {
  const base =
    studyName
      .normalize("NFKD")
      .replace(/[^\w\s-]/g, "")
      .trim()
      .replace(/\s+/g, "-")
      .toLowerCase()
      .slice(0, 60) || "study";
  return `${base}-${now.toISOString().slice(0, 10)}.csv`;
}

/** What a study's server refusal means for the person in front of the page. */
export const STUDY_ERRORS: Record<string, string> = {
  feature_off: "This study's condition does not offer that.",
  study_closed: "This study is closed: it takes no new participants.",
  consent_required: "Please read and accept the consent first.",
  studies_need_token_auth: "Studies need the server to run with tokens (HAICO_AUTH=token).",
};

/** The words for a refusal: the server's own message, or ours when it sent none. */
export function studyErrorText(code: string, message: string): string {
  const ours = STUDY_ERRORS[code];
  if (ours === undefined) return message;
  return message && message !== code ? message : ours;
}
