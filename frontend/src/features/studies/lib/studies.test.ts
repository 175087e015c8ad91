import { describe, expect, it } from "vitest";
import {
  ALL_FEATURES,
  agoText,
  asStudyReader,
  participantFamilyUrl,
  csvFileName,
  draftBody,
  draftProblem,
  durationText,
  emptyDraft,
  featuresText,
  figureNumber,
  figureText,
  inJoinOrder,
  joinUrl,
  lines,
  studyErrorText,
  withSwitch,
} from "./studies";
import type { ParticipantRow } from "./types";

const LINEAR = { graph: false, branching: false, merge: false, whatif: false };

describe("the new-study form", () => {
  it("starts with a branching and a linear condition", () => {
    const d = emptyDraft();
    expect(d.conditions.map((c) => [c.name, c.features])).toEqual([
      ["Branching", ALL_FEATURES],
      ["Linear", LINEAR],
    ]);
  });

  it("becomes the contract's request, empty fields left out", () => {
    const d = {
      ...emptyDraft(),
      name: "  Op-ed study ",
      objective: "Write an op-ed",
      documentTitle: "Draft",
      documentContent: "First line\n",
      preferences: "plain words\n\n  short  \n",
      todos: "outline\r\nsources",
      consent: "You agree to…",
    };
    d.conditions[1] = { ...d.conditions[1]!, profileId: "pr_1" };
    expect(draftBody(d)).toEqual({
      name: "Op-ed study",
      description: "",
      task: {
        objective: "Write an op-ed",
        document: { title: "Draft", content: "First line\n" },
        preferences: ["plain words", "short"],
        todos: ["outline", "sources"],
      },
      conditions: [
        { name: "Branching", features: ALL_FEATURES },
        { name: "Linear", features: LINEAR, profile_id: "pr_1" },
      ],
      consent: "You agree to…",
    });
    const bare = draftBody({ ...emptyDraft(), name: "x", description: " why " });
    expect(bare.task).toEqual({});
    expect(bare.description).toBe("why");
    expect("consent" in bare).toBe(false);
    expect("codebook_id" in bare).toBe(false);
    // the codebook picked is sent as the number the codebooks answer carries
    expect(draftBody({ ...emptyDraft(), name: "x", codebookId: "12" }).codebook_id).toBe(12);
  });

  it("says what keeps a draft from being sent", () => {
    const ok = { ...emptyDraft(), name: "S" };
    expect(draftProblem(ok)).toBeNull();
    expect(draftProblem({ ...ok, name: " " })).toMatch(/name/);
    expect(draftProblem({ ...ok, conditions: [] })).toMatch(/at least one condition/);
    const twins = { ...ok, conditions: ok.conditions.map((c) => ({ ...c, name: "Same " })) };
    expect(draftProblem(twins)).toMatch(/Two conditions are named “Same”/);
    expect(draftProblem({ ...ok, conditions: [{ ...ok.conditions[0]!, name: "" }] })).toMatch(/every condition/);
    expect(draftProblem({ ...ok, documentContent: "text" })).toMatch(/title/);
  });

  it("keeps a condition with no graph linear: no restore either", () => {
    expect(withSwitch(ALL_FEATURES, "graph", false)).toEqual({ ...ALL_FEATURES, graph: false, branching: false });
    expect(withSwitch(LINEAR, "branching", true)).toEqual({ ...LINEAR, graph: true, branching: true });
    expect(withSwitch(ALL_FEATURES, "merge", false)).toEqual({ ...ALL_FEATURES, merge: false });
  });

  it("names what a condition allows", () => {
    expect(featuresText(ALL_FEATURES)).toBe("everything");
    expect(featuresText(LINEAR)).toBe("linear chat");
    expect(featuresText({ ...LINEAR, whatif: true })).toBe("linear chat, what if");
    expect(featuresText({ ...ALL_FEATURES, merge: false })).toBe("graph, branching, what if");
  });

  it("reads one item a line", () => {
    expect(lines(" a \n\nb\r\n  ")).toEqual(["a", "b"]);
  });
});

describe("the study page", () => {
  it("makes the join link on the studio's own origin", () => {
    expect(joinUrl("https://haico.example", "st_abc")).toBe("https://haico.example/?join=st_abc");
    expect(joinUrl("http://h", "st_a b")).toBe("http://h/?join=st_a+b");
  });

  it("opens a participant's family read-only, named as a participant's", () => {
    expect(participantFamilyUrl("th_1")).toBe("/?thread=th_1&view=study");
    const own = { role: null, owner: null, canSend: true, canShare: true, known: true };
    expect(asStudyReader(own)).toEqual({
      role: "viewer",
      owner: "A study participant",
      canSend: false,
      canShare: false,
      known: true,
      study: true,
    });
    // a share that says more keeps its role and owner; the page still sends nothing
    const coder = { role: "commenter", owner: "ada", canSend: false, canShare: false };
    expect(asStudyReader(coder)).toEqual(coder);
  });

  it("writes figures short", () => {
    expect(figureNumber(2)).toBe("2");
    expect(figureNumber(2.25)).toBe("2.3");
    expect(figureNumber(null)).toBe("–");
    expect(figureNumber(Number.NaN)).toBe("–");
    expect(figureText({ mean: 1.5, median: 1 })).toBe("1.5 / 1");
    expect(figureText(undefined)).toBe("– / –");
    expect(durationText(42.4)).toBe("42 s");
    expect(durationText(245)).toBe("4 min 05 s");
    expect(durationText(null)).toBe("–");
  });

  it("says how long ago a participant was active", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    expect(agoText(null, now)).toBe("never");
    expect(agoText("not a date", now)).toBe("–");
    expect(agoText("2026-01-01T11:59:55Z", now)).toBe("just now");
    expect(agoText("2026-01-01T11:59:30Z", now)).toBe("30 s ago");
    expect(agoText("2026-01-01T11:50:00Z", now)).toBe("10 min ago");
    expect(agoText("2026-01-01T09:00:00Z", now)).toBe("3 h ago");
    expect(agoText("2025-12-29T12:00:00Z", now)).toBe("3 d ago");
  });

  it("keeps participants in join order, P010 after P009", () => {
    const row = (p: string) => ({ participant: p }) as ParticipantRow;
    expect(inJoinOrder([row("P010"), row("P002"), row("P009")]).map((r) => r.participant)).toEqual([
      "P002",
      "P009",
      "P010",
    ]);
  });

  it("names the CSV after the study and the day", () => {
    expect(csvFileName("Op-ed: spring / 2026!", new Date("2026-03-04T10:00:00Z"))).toBe(
      "op-ed-spring-2026-2026-03-04.csv",
    );
    expect(csvFileName("???", new Date("2026-03-04T10:00:00Z"))).toBe("study-2026-03-04.csv");
  });

  it("says a study's refusals in words", () => {
    expect(studyErrorText("study_closed", "")).toMatch(/closed/);
    expect(studyErrorText("study_closed", "study_closed")).toMatch(/no new participants/);
    expect(studyErrorText("feature_off", "Branching is off in this condition.")).toBe(
      "Branching is off in this condition.",
    );
    expect(studyErrorText("not_found", "No such study.")).toBe("No such study.");
  });
});
