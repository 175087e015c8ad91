import { describe, expect, it } from "vitest";
import {
  ApiError,
  apiPath,
  authHeaders,
  browserTokenStore,
  makeClient,
  makeUpload,
  messageOf,
  streamOf,
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
    const client = makeClient(store, { fetch: fake, baseUrl: "http://test" });
    expect(unwrap(await client.GET("/api/conversations"))).toEqual([]);
    const missing = await client.GET("/api/conversations/{thread_id}", { params: { path: { thread_id: "th_x" } } });
    expect(() => unwrap(missing)).toThrow("no such conversation");
    expect(seen).toEqual(["Bearer tok", "Bearer tok"]);
  });

  it("tells a request that got no answer as unreachable, and leaves an abort alone", async () => {
    const refused = (async () => {
      throw new TypeError("Failed to fetch");
    }) as unknown as typeof fetch;
    const down = makeClient(browserTokenStore(null), { fetch: refused, baseUrl: "http://test" });
    const failure = await down.GET("/api/conversations").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiError);
    expect([(failure as ApiError).code, (failure as ApiError).message]).toEqual(["network", UNREACHABLE]);

    const abort = (async () => {
      throw new DOMException("stopped", "AbortError");
    }) as unknown as typeof fetch;
    const stopped = makeClient(browserTokenStore(null), { fetch: abort, baseUrl: "http://test" });
    const cancelled = await stopped.GET("/api/conversations").catch((e: unknown) => e);
    expect((cancelled as Error).name).toBe("AbortError");
  });

  it("asks for a token again on every answer 401, streams and downloads too", async () => {
    const fake = (async (input: Request) =>
      new Response(input.url.includes("th_gone") ? "{}" : "data: x\n\n", {
        status: input.url.includes("th_gone") ? 401 : 200,
        headers: { "content-type": "text/event-stream" },
      })) as unknown as typeof fetch;
    let asked = 0;
    const client = makeClient(browserTokenStore(null), {
      fetch: fake,
      baseUrl: "http://test",
      onUnauthorized: () => asked++,
    });
    const events = (thread_id: string) =>
      client.GET("/api/conversations/{thread_id}/events", { params: { path: { thread_id } }, parseAs: "stream" });
    const body = streamOf(await events("th_ok"));
    expect(await new Response(body).text()).toBe("data: x\n\n");
    expect(asked).toBe(0);
    const refused = await events("th_gone");
    expect(() => streamOf(refused)).toThrow(ApiError);
    const download = await client.GET("/api/conversations/{thread_id}/export", {
      params: { path: { thread_id: "th_gone" } },
      parseAs: "blob",
    });
    expect(() => unwrap(download)).toThrow(ApiError);
    expect(asked).toBe(2);
  });

  it("encodes every id it puts in a path, in one place", async () => {
    expect(apiPath("/api/conversations/{thread_id}/nodes/{k}", { thread_id: "th a/b?c", k: 2 })).toBe(
      "/api/conversations/th%20a%2Fb%3Fc/nodes/2",
    );
    expect(apiPath("/api/jobs/{job_id}", undefined)).toBe("/api/jobs/{job_id}");
    const urls: string[] = [];
    const fake = (async (input: Request) => {
      urls.push(input.url);
      return new Response("{}", { status: 200, headers: { "content-type": "application/json" } });
    }) as unknown as typeof fetch;
    const client = makeClient(browserTokenStore(null), { fetch: fake, baseUrl: "http://test" });
    await client.GET("/api/conversations/{thread_id}/path", {
      params: { path: { thread_id: "th_x#1" }, query: { node: "th_x#1:2", format: "md", notes: true } },
      parseAs: "blob",
    });
    expect(urls).toEqual(["http://test/api/conversations/th_x%231/path?node=th_x%231%3A2&format=md&notes=true"]);
  });

  it("says what failed: the error's message, or a generic line", () => {
    expect(messageOf(new ApiError(409, "x", "The path moved on."))).toBe("The path moved on.");
    expect(messageOf("boom")).toBe("Something went wrong.");
  });

  it("uploads with the token and progress, and hands a 401 to the same handler", async () => {
    const store = browserTokenStore(null);
    store.set("tok");
    let asked = 0;
    const sent: { url?: string; headers: Record<string, string>; body?: unknown } = { headers: {} };
    const answers = [
      { status: 201, text: '{"thread_id":"th_new"}' },
      { status: 401, text: "{}" },
    ];
    const xhr = () => {
      const fake = {
        status: 0,
        responseText: "",
        upload: {
          onprogress: null as ((e: { loaded: number; total: number; lengthComputable: boolean }) => void) | null,
        },
        onload: null as (() => void) | null,
        onerror: null as (() => void) | null,
        open: (_method: string, url: string) => void (sent.url = url),
        setRequestHeader: (k: string, v: string) => void (sent.headers[k] = v),
        send(body: unknown) {
          sent.body = body;
          fake.upload.onprogress?.({ loaded: 5, total: 0, lengthComputable: false });
          const answer = answers.shift();
          if (answer === undefined) return fake.onerror?.();
          Object.assign(fake, { status: answer.status, responseText: answer.text });
          fake.onload?.();
        },
      };
      return fake as unknown as XMLHttpRequest;
    };
    const upload = makeUpload(store, { xhr, baseUrl: "http://test", onUnauthorized: () => asked++ });
    const file = new Blob(["0123456789"]);
    const progress: { loaded: number; total: number }[] = [];
    expect(await upload("/api/conversations/import", file, (p) => progress.push(p))).toEqual({
      status: 201,
      text: '{"thread_id":"th_new"}',
    });
    expect(sent.url).toBe("http://test/api/conversations/import");
    expect(sent.headers.Authorization).toBe("Bearer tok");
    expect(sent.body).toBe(file);
    expect(progress).toEqual([{ loaded: 5, total: 10 }]);
    expect(asked).toBe(0);
    expect((await upload("/api/conversations/import", file, () => undefined)).status).toBe(401);
    expect(asked).toBe(1);
    expect(await upload("/api/conversations/import", file, () => undefined)).toEqual({ status: 0, text: "" });
  });
});
