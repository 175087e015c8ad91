import { describe, expect, it } from "vitest";
import {
  JOINS_KEY,
  PARTICIPANT_KEY,
  PENDING_JOIN_KEY,
  captureJoin,
  dropPendingJoin,
  enterAsParticipant,
  isParticipantToken,
  joinTokenOf,
  participantFeatures,
  participantTokenStore,
  pendingJoin,
  recallJoin,
  rememberJoin,
} from "./participant";

function memoryStorage() {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
  };
}

function ownStore(initial: string | null) {
  let token = initial;
  return { get: () => token, set: (t: string | null) => void (token = t) };
}

const ANSWER = { participant: "P001", condition: { id: "c1", name: "Linear" }, thread_id: "th_1", token: "pt_secret" };

describe("joining a study by link", () => {
  it("reads only a study token from the address", () => {
    expect(joinTokenOf("?join=st_abc")).toBe("st_abc");
    expect(joinTokenOf("?join=sh_abc")).toBeNull();
    expect(joinTokenOf("?thread=th_1")).toBeNull();
  });

  it("keeps the join for the tab until it is done or dropped", () => {
    const session = memoryStorage();
    captureJoin("?join=st_abc", session);
    expect(pendingJoin(session)).toBe("st_abc");
    // a later address without it (the bar dropped it) keeps the pending join
    captureJoin("", session);
    expect(pendingJoin(session)).toBe("st_abc");
    enterAsParticipant(session, "pt_x");
    expect(pendingJoin(session)).toBeNull();
    expect(session.getItem(PARTICIPANT_KEY)).toBe("pt_x");
    captureJoin("?join=st_other", session);
    dropPendingJoin(session);
    expect(session.data.has(PENDING_JOIN_KEY)).toBe(false);
    expect(pendingJoin(null)).toBeNull();
  });

  it("remembers a join by study, so the same link never joins twice", () => {
    const local = memoryStorage();
    expect(recallJoin(local, "st_a")).toBeNull();
    rememberJoin(local, "st_a", ANSWER);
    rememberJoin(local, "st_b", { ...ANSWER, participant: "P007", token: "pt_b" });
    expect(recallJoin(local, "st_a")).toEqual({ participant: "P001", thread_id: "th_1", token: "pt_secret" });
    expect(recallJoin(local, "st_b")?.participant).toBe("P007");
  });

  it("ignores a remembered join that is not one", () => {
    const local = memoryStorage();
    local.setItem(JOINS_KEY, "not json");
    expect(recallJoin(local, "st_a")).toBeNull();
    local.setItem(JOINS_KEY, "[1]");
    expect(recallJoin(local, "st_a")).toBeNull();
    local.setItem(JOINS_KEY, JSON.stringify({ st_a: { token: "hk_user" } }));
    expect(recallJoin(local, "st_a")).toBeNull();
    // and writing over garbage starts afresh
    rememberJoin(local, "st_a", ANSWER);
    expect(recallJoin(local, "st_a")?.token).toBe("pt_secret");
  });

  it("acts with the tab's participant token before any other; signing in replaces it", () => {
    const session = memoryStorage();
    const own = ownStore("hk_mine");
    const store = participantTokenStore(own, session);
    expect(store.get()).toBe("hk_mine");
    enterAsParticipant(session, "pt_x");
    expect(store.get()).toBe("pt_x");
    // a reload: a new store over the same tab
    expect(participantTokenStore(own, session).get()).toBe("pt_x");
    store.set("hk_new");
    expect(store.get()).toBe("hk_new");
    expect(session.data.has(PARTICIPANT_KEY)).toBe(false);
    expect(participantTokenStore(ownStore(null), null).get()).toBeNull();
  });

  it("tells a participant token apart", () => {
    expect(isParticipantToken("pt_x")).toBe(true);
    expect(isParticipantToken("hk_x")).toBe(false);
    expect(isParticipantToken(null)).toBe(false);
  });

  it("offers everything when no condition says otherwise", () => {
    expect(participantFeatures(undefined)).toEqual({ graph: true, branching: true, merge: true, whatif: true });
    const linear = { graph: false, branching: false, merge: false, whatif: false };
    expect(participantFeatures(linear)).toBe(linear);
  });
});
