import { describe, expect, it } from "vitest";
import {
  ApiError,
  authHeaders,
  browserTokenStore,
  makeClient,
  TOKEN_KEY,
  toApiError,
  UNREACHABLE,
  unwrap,
} from "./client";

function memoryStorage() {
  const data = new Map<string, string>();
  return {
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
    data,
  };
}

describe("api client", () => {
  it("keeps the token in storage, or in memory without one", () => {
    const storage = memoryStorage();
    const store = browserTokenStore(storage);
    expect(store.get()).toBeNull();
    store.set("abc");
    expect(storage.data.get(TOKEN_KEY)).toBe("abc");
    expect(authHeaders(store)).toEqual({ Authorization: "Bearer abc" });
    store.set(null);
    expect(storage.data.has(TOKEN_KEY)).toBe(false);
    expect(authHeaders(store)).toEqual({});
    const mem = browserTokenStore(null);
    mem.set("t");
    expect(mem.get()).toBe("t");
  });

  it("turns error bodies into ApiErrors with the server's message", () => {
    const e = toApiError(409, { code: "checkout_would_discard_changes", message: "You edited the objective." });
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.message]).toEqual([409, "checkout_would_discard_changes", "You edited the objective."]);
    expect(toApiError(404, { detail: "Not Found" }).message).toBe("Not Found");
    expect(toApiError(500, "boom").message).toBe("The server answered 500.");
    expect(toApiError(400, { message: "m" }).code).toBe("http_400");
  });

  it("sends the bearer token and unwraps answers", async () => {
    const store = browserTokenStore(null);
    store.set("tok");
    const seen: string[] = [];
    const fake = (async (input: Request) => {
      seen.push(input.headers.get("authorization") ?? "");
      if (input.url.endsWith("/api/conversations/th_x")) {
        return new Response(JSON.stringify({ code: "not_found", message: "no such conversation" }), {
          status: 404,
          headers: { "content-type": "application/json" },
        });
      }
      return new Response(JSON.stringify([]), { status: 200, headers: { "content-type": "application/json" } });
    }) as unknown as typeof fetch;
    const client = makeClient(store, fake, "http://test");
    expect(unwrap(await client.GET("/api/conversations"))).toEqual([]);
    const missing = await client.GET("/api/conversations/{thread_id}", { params: { path: { thread_id: "th_x" } } });
    expect(() => unwrap(missing)).toThrow("no such conversation");
    expect(seen).toEqual(["Bearer tok", "Bearer tok"]);
  });

  it("tells a request that got no answer as unreachable, and leaves an abort alone", async () => {
    const refused = (async () => {
      throw new TypeError("Failed to fetch");
    }) as unknown as typeof fetch;
    const down = makeClient(browserTokenStore(null), refused, "http://test");
    const failure = await down.GET("/api/conversations").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiError);
    expect([(failure as ApiError).code, (failure as ApiError).message]).toEqual(["network", UNREACHABLE]);

    const abort = (async () => {
      throw new DOMException("stopped", "AbortError");
    }) as unknown as typeof fetch;
    const stopped = makeClient(browserTokenStore(null), abort, "http://test");
    const cancelled = await stopped.GET("/api/conversations").catch((e: unknown) => e);
    expect((cancelled as Error).name).toBe("AbortError");
  });
});
