/**
 * The typed API client (openapi-fetch over the generated schema) and its error type.
 * In token mode every request carries the bearer token kept in local storage.
 */
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Conversation = Schemas["ConversationOut"];
export type Workspace = Schemas["WorkspaceOut"];
export type History = Schemas["HistoryOut"];
export type Preference = Schemas["PreferenceOut"];
export type Todo = Schemas["TodoOut"];
export type Artifact = Schemas["ArtifactOut"];
export type ChosenPath = Schemas["ChosenPathOut"];

export const TOKEN_KEY = "haico.token";

export interface TokenStore {
  get(): string | null;
  set(token: string | null): void;
}

/** Local storage when there is a window, memory otherwise (tests, prerender). */
export function browserTokenStore(storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null): TokenStore {
  let memory: string | null = null;
  return {
    get: () => (storage ? storage.getItem(TOKEN_KEY) : memory),
    set: (token) => {
      if (!storage) memory = token;
      else if (token === null) storage.removeItem(TOKEN_KEY);
      else storage.setItem(TOKEN_KEY, token);
    },
  };
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

export const UNREACHABLE = "The server could not be reached.";

/** A request that got no answer at all: the server down or the network gone. */
export function unreachable(): ApiError {
  return new ApiError(0, "network", UNREACHABLE);
}

function aborted(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}

/** The server's `{code, message}` body as an ApiError (any other body gets a generic one). */
export function toApiError(status: number, body: unknown): ApiError {
  if (typeof body === "object" && body !== null) {
    const b = body as { code?: unknown; message?: unknown; detail?: unknown };
    if (typeof b.message === "string") {
      return new ApiError(status, typeof b.code === "string" ? b.code : `http_${status}`, b.message);
    }
    if (typeof b.detail === "string") return new ApiError(status, `http_${status}`, b.detail);
  }
  return new ApiError(status, `http_${status}`, `The server answered ${status}.`);
}

export function authHeaders(store: TokenStore): Record<string, string> {
  const token = store.get();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export function makeClient(store: TokenStore, fetchImpl?: typeof fetch, baseUrl = "") {
  const client = createClient<paths>({ baseUrl, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  const auth: Middleware = {
    onRequest({ request }) {
      for (const [k, v] of Object.entries(authHeaders(store))) request.headers.set(k, v);
      return request;
    },
  };
  // fetch's own failure ("Failed to fetch") told the way the studio tells it; a request
  // the studio aborted stays an AbortError.
  const network: Middleware = {
    onError: ({ error }) => (aborted(error) ? undefined : unreachable()),
  };
  client.use(auth, network);
  return client;
}

export type Client = ReturnType<typeof makeClient>;

/** The data of an openapi-fetch result, or its error thrown as an ApiError. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) throw toApiError(result.response.status, result.error);
  return result.data as T;
}
