import { describe, expect, it } from "vitest";
import { family } from "@/lib/testing/fixtures";
import {
  changedSurfaces,
  jobActive,
  jobOfAction,
  jobCaption,
  jobPercent,
  laterJob,
  inStepLabels,
  latestNode,
  mergesInRange,
  pairName,
  rangeProblem,
  stepName,
  replyDiff,
  threadOf,
  type Job,
  type PathsCompared,
} from "./whatif";

const job = (done: number, total: number, state: "queued" | "running" | "done" | "failed" | "cancelled") => ({
  progress: { done, total },
  state,
  error: state === "failed" ? "the server restarted during the job" : null,
});

describe("what if", () => {
  it("says whether a job can still change, and how far it got", () => {
    expect(jobActive(job(0, 3, "queued"))).toBe(true);
    expect(jobActive(job(1, 3, "running"))).toBe(true);
    expect(jobActive(job(3, 3, "done"))).toBe(false);
    expect(jobActive(null)).toBe(false);
    expect(jobPercent(job(1, 3, "running"))).toBe(33);
    expect(jobPercent(job(0, 0, "queued"))).toBe(0);
    expect(jobCaption(job(1, 1, "done"))).toBe("1 of 1 step · done");
    expect(jobCaption(job(2, 6, "failed"))).toBe("2 of 6 steps · failed: the server restarted during the job");
  });

  it("keeps the later of two reports of a job: an older answer never shows over a newer one", () => {
    const report = (done: number, state: Job["state"], id = "job_1"): Job => ({
      id,
      kind: "replay",
      thread_id: "th_1",
      thread_ids: [],
      profile_id: null,
      created_at: "2026-12-05T00:00:00Z",
      updated_at: "2026-12-05T00:00:00Z",
      ...job(done, 3, state),
    });
    const done = report(3, "done");
    // the first GET (queued) answered after the stream said done
    expect(laterJob(done, report(0, "queued"))).toBe(done);
    expect(laterJob(report(1, "running"), report(2, "running")).progress.done).toBe(2);
    expect(laterJob(report(2, "running"), report(1, "running")).progress.done).toBe(2);
    expect(laterJob(report(1, "running"), done)).toBe(done);
    expect(laterJob(undefined, done)).toBe(done);
    // another job's report replaces nothing of this one's
    const other = report(0, "queued", "job_2");
    expect(laterJob(done, other)).toBe(other);
  });

  it("diffs two replies line by line", () => {
    expect(replyDiff("a\nb", "a\nc")).toEqual([
      { sign: "-", text: "b" },
      { sign: " ", text: "a" },
      { sign: "+", text: "c" },
    ]);
    expect(replyDiff("same", "same")).toEqual([{ sign: " ", text: "same" }]);
    expect(latestNode("th_x", 4)).toBe("th_x:4");
  });

  it("names what differs in the workspace, matching replayed items by text", () => {
    const item = (text: string, uid: string) => ({ text, uid }) as never;
    const cmp = {
      objective: { changed: false },
      document: { changed: true },
      preferences: { added: [item("brief", "u1")], removed: [item("brief", "u2")] },
      todos: { added: [item("pack", "u3"), item("fly", "u4")], removed: [item("pack", "u5")] },
    } as unknown as PathsCompared["pairs"][number]["comparison"];
    expect(changedSurfaces(cmp)).toEqual(["document", "1 todo"]);
    expect(changedSurfaces(null)).toEqual([]);
  });

  it("reads the job of a progress action of the event stream", () => {
    const job = { id: "job_1", state: "running", progress: { done: 1, total: 2 }, thread_ids: [], error: null };
    expect(jobOfAction({ type: "haico/jobProgress", job })).toEqual(job);
    expect(jobOfAction({ type: "haico/threadChanged" })).toBeNull();
    expect(jobOfAction({ type: "haico/jobProgress", job: null })).toBeNull();
    expect(jobOfAction({ type: "haico/jobProgress", job: { id: 3 } })).toBeNull();
  });

  it("accepts a replay's end on a path through its start, and says why another cannot be", () => {
    // A: 1–4; B branches at A:2 (B:3, B:4); C branches at A:1 (C:2)
    const g = family(
      [
        { id: "A", turns: 4 },
        { id: "B", parent: "A", bp: 2, turns: 4 },
        { id: "C", parent: "A", bp: 1, turns: 2 },
      ],
      "A",
    );
    const label = (n: string) => n.replace(":", "/");
    expect(rangeProblem(g, "A:2", "A:2", label)).toBeNull();
    expect(rangeProblem(g, "A:2", "A:4", label)).toBeNull();
    expect(rangeProblem(g, "A:1", "B:4", label)).toBeNull();
    expect(rangeProblem(g, "A:2", "B:3", label)).toBeNull();
    expect(rangeProblem(g, "B:3", "B:4", label)).toBeNull();
    expect(rangeProblem(g, "A:3", "A:1", label)).toBe(
      "Step A/1 comes before step A/3: pick a later step of a path through A/3.",
    );
    expect(rangeProblem(g, "A:3", "B:4", label)).toBe(
      "Step B/4 is on another path: pick a later step of a path through A/3.",
    );
    expect(rangeProblem(g, "A:2", "C:2", label)).toBe(
      "Step C/2 is on another path: pick a later step of a path through A/2.",
    );
    expect(rangeProblem(g, "A:2", "A:9", label)).toBe("Step A/9 is not a step of this conversation.");
    expect(threadOf("th_x:12")).toBe("th_x");
  });

  it("names steps as the graph does, never by their ids", () => {
    const t = `th_${"a".repeat(32)}`;
    const b = `th_${"b".repeat(32)}`;
    const labels = new Map([
      [`${t}:2`, "2"],
      [`${b}:3`, "3.1"],
    ]);
    expect(stepName(`${b}:3`, labels)).toBe("3.1");
    expect(stepName(`${b}:7`, labels)).toBe("7"); // not on the graph yet: its turn
    expect(stepName(null, labels)).toBe("—");
    expect(pairName({ a: `${t}:2`, b: `${t}:2` }, labels)).toBe("step 2");
    expect(pairName({ a: `${t}:3`, b: `${b}:3` }, labels)).toBe("step 3 · 3.1");
    expect(pairName({ a: null, b: `${b}:3` }, labels)).toBe("step 3.1");
    const branches = new Map([
      [t, "main"],
      [b, "from 3.1"],
    ]);
    expect(inStepLabels(`to_node ${b}:3 does not descend from from_node ${t}:2`, labels, branches)).toBe(
      "step 3.1 does not descend from step 2",
    );
    expect(inStepLabels(`node ${b}:9 does not exist`, labels)).toBe("step 9 does not exist");
    expect(inStepLabels(`${b} is archived; ${t} too`, labels, branches)).toBe(
      "the path from 3.1 is archived; the main path too",
    );
    expect(inStepLabels(`th_${"c".repeat(32)} is gone`, labels, branches)).toBe("this conversation is gone");
    expect(inStepLabels("no ids here", labels)).toBe("no ids here");
  });

  it("finds the merge steps a replay's range would skip", () => {
    // A: 1–4 with a merge at A:3; B branches at A:1 (B:2, B:3), B:3 a merge
    const g = family(
      [
        { id: "A", turns: 4 },
        { id: "B", parent: "A", bp: 1, turns: 3 },
      ],
      "A",
    );
    const merged = {
      ...g,
      nodes: g.nodes.map((n) => (n.id === "A:3" || n.id === "B:3" ? { ...n, kind: "merge" as const } : n)),
    };
    const labels = new Map([
      ["A:3", "3"],
      ["B:3", "3.1"],
    ]);
    expect(mergesInRange(merged, "A:2", "A:4", labels)).toEqual(["3"]);
    expect(mergesInRange(merged, "A:1", "B:3", labels)).toEqual(["3.1"]);
    expect(mergesInRange(merged, "A:4", "A:4", labels)).toEqual([]);
    expect(mergesInRange(g, "A:1", "A:4", labels)).toEqual([]);
  });
});
