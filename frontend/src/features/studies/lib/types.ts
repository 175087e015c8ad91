/**
 * The wire shapes of studies as the studio reads them (the contract's "Studies", from
 * the generated client): a study, its participants and per-condition figures, a
 * participant's own view of itself, and the answer to a join.
 */

import type { Schemas } from "@/lib/api/client";

/** The interface features a condition allows (every one `true` unless turned off). */
export type Features = Schemas["Features"];
export type StudyTask = Schemas["Task"];
export type StudyCondition = Schemas["ConditionOut"];
export type Study = Schemas["StudyOut"];
export type StudyCreate = Schemas["StudyCreate"];

export type ParticipantState = Schemas["ParticipantRow"]["state"];
/** One participant: condition (its name), state, counts, last activity. */
export type ParticipantRow = Schemas["ParticipantRow"];
/** A count over a condition's participants. */
export type Figure = Schemas["Stat"];
export type ConditionMetrics = Schemas["ConditionMetrics"];
export type StudyMetrics = Schemas["StudyMetrics"];
export type JoinAnswer = Schemas["JoinOut"];
export type Me = Schemas["ParticipantMe"];
