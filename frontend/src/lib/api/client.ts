/**
 * The typed API client (openapi-fetch over the generated schema) and its error type:
 * the one way the studio talks to the server. In token mode every request carries the
 * bearer token kept in local storage; every answer 401 goes to one handler (the
 * sign-in gate); ids become URL parts in one place (`apiPath`). Streams (SSE) and
 * downloads are asked through the same client (`parseAs`), an upload with progress
 * through `upload` beside it.
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
export type SearchHit = Schemas["SearchHit"];

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

/** What a failed request tells the user (the server's message, when it sent one). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : "Something went wrong.";
}

/** An API path with its `{name}` parameters filled in, each URL-encoded: the one place
 * an id becomes part of a URL (a parameter not given stays as it is). */
export function apiPath(template: string, params: Record<string, unknown> | undefined): string {
  return template.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const value = params?.[name];
    return value === undefined || value === null ? whole : encodeURIComponent(String(value));
  });
}

export interface ApiOptions {
  /** called for every answer 401 (no token, or one the server no longer knows) */
  onUnauthorized?: () => void;
  fetch?: typeof fetch;
  baseUrl?: string;
  /** the upload's request (tests hand in a fake) */
  xhr?: () => XMLHttpRequest;
}

/** The one 401 handler: an answer 401 (no token, or one the server no longer knows)
 * asks for a token again. */
function answered(status: number, options: ApiOptions): void {
  if (status === 401) options.onUnauthorized?.();
}

export function makeClient(store: TokenStore, options: ApiOptions = {}) {
  const { baseUrl = "" } = options;
  const client = createClient<paths>({
    baseUrl,
    pathSerializer: apiPath,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const auth: Middleware = {
    onRequest({ request }) {
      for (const [k, v] of Object.entries(authHeaders(store))) request.headers.set(k, v);
      return request;
    },
    onResponse({ response }) {
      answered(response.status, options);
      return undefined;
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

/** The body of a streamed answer (asked with `parseAs: "stream"`), or its refusal
 * thrown as an ApiError. */
export function streamOf(result: {
  data?: ReadableStream<Uint8Array> | null;
  error?: unknown;
  response: Response;
}): ReadableStream<Uint8Array> {
  const body = unwrap(result);
  if (body === null || body === undefined) throw toApiError(result.response.status, null);
  return body;
}

/** The API paths a file is uploaded to (the body is the file as it is). */
export type UploadPath = "/api/conversations/import";

export interface UploadProgress {
  loaded: number;
  total: number;
}

/** What an upload got back: the status (0: no answer at all) and the body's text. */
export interface UploadAnswer {
  status: number;
  text: string;
}

export type Upload = (path: UploadPath, file: Blob, onProgress: (p: UploadProgress) => void) => Promise<UploadAnswer>;

/** An upload with progress (fetch reports none), with the client's token and its 401
 * handler; resolves to whatever the server answered (the caller reads it). */
export function makeUpload(store: TokenStore, options: ApiOptions = {}): Upload {
  const { baseUrl = "" } = options;
  const open = options.xhr ?? (() => new XMLHttpRequest());
  return (path, file, onProgress) =>
    new Promise((resolve) => {
      const xhr = open();
      xhr.open("POST", baseUrl + apiPath(path, undefined));
      xhr.setRequestHeader("Content-Type", "application/json");
      xhr.setRequestHeader("Accept", "application/json");
      for (const [k, v] of Object.entries(authHeaders(store))) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
      xhr.onload = () => {
        answered(xhr.status, options);
        resolve({ status: xhr.status, text: xhr.responseText });
      };
      xhr.onerror = () => resolve({ status: 0, text: "" });
      xhr.send(file);
    });
}
