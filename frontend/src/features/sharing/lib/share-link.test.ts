import { describe, expect, it } from "vitest";
import {
  accessOf,
  canSend,
  expiryAt,
  isLinkToken,
  linkAwareTokenStore,
  roleText,
  shareTokenOf,
  shareUrl,
  withoutCredentials,
} from "./share-link";

function memoryStorage() {
  const data = new Map<string, string>();
  return {
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
  };
}

function ownStore(initial: string | null) {
  let token = initial;
  return { get: () => token, set: (t: string | null) => void (token = t) };
}

describe("review links", () => {
  it("reads a link token from the URL, never another token", () => {
    expect(shareTokenOf("?thread=th_1&share=sh_abc")).toBe("sh_abc");
    expect(shareTokenOf("?thread=th_1&share=hk_abc")).toBeNull();
    expect(shareTokenOf("?thread=th_1")).toBeNull();
  });

  it("uses the tab's link token before the user's own, and keeps it across a reload", () => {
    const session = memoryStorage();
    const own = ownStore("hk_mine");
    expect(linkAwareTokenStore(own, session, "?share=sh_x").get()).toBe("sh_x");
    // a reload: the URL may have lost the parameter, the tab keeps the link
    expect(linkAwareTokenStore(own, session, "?thread=th_1").get()).toBe("sh_x");
    expect(linkAwareTokenStore(ownStore("hk_mine"), memoryStorage(), "").get()).toBe("hk_mine");
  });

  it("signing in replaces the link with the user's own token", () => {
    const session = memoryStorage();
    const own = ownStore(null);
    const store = linkAwareTokenStore(own, session, "?share=sh_x");
    store.set("hk_new");
    expect(store.get()).toBe("hk_new");
    expect(session.getItem("haico.share")).toBeNull();
  });

  it("builds the link's address and knows a link token", () => {
    expect(shareUrl("http://h", "th_1", "sh_x")).toBe("http://h/?thread=th_1&share=sh_x");
    expect(isLinkToken("sh_x")).toBe(true);
    expect(isLinkToken("hk_x")).toBe(false);
    expect(isLinkToken(null)).toBe(false);
  });

  it("offers the composer to owners and editors only", () => {
    expect(canSend(null)).toBe(true);
    expect(canSend("editor")).toBe(true);
    expect(canSend("commenter")).toBe(false);
    expect(canSend("viewer")).toBe(false);
  });

  it("offers writes to owners and editors, notes to commenters too, neither to viewers", () => {
    expect(accessOf(null)).toEqual({ edit: true, note: true });
    expect(accessOf("editor")).toEqual({ edit: true, note: true });
    expect(accessOf("commenter")).toEqual({ edit: false, note: true });
    expect(accessOf("viewer")).toEqual({ edit: false, note: false });
  });

  it("turns an expiry choice into a time", () => {
    expect(expiryAt(null, 0)).toBeNull();
    expect(expiryAt(24, 0)).toBe("1970-01-02T00:00:00.000Z");
  });
});

describe("the banner's words", () => {
  it("names each role", () => {
    expect(roleText("viewer")).toMatch(/read only/);
    expect(roleText("commenter")).toMatch(/notes/);
    expect(roleText("editor")).toBe("an editor");
  });
});

describe("credentials leave the address bar", () => {
  it("drops ?share= and ?join= and keeps every other parameter", () => {
    expect(withoutCredentials("?thread=th_1&share=sh_abc")).toBe("?thread=th_1");
    expect(withoutCredentials("?join=st_x&thread=th_2&share=sh_y&a=1")).toBe("?thread=th_2&a=1");
    expect(withoutCredentials("?share=sh_abc")).toBe("");
    expect(withoutCredentials("")).toBe("");
  });
});
