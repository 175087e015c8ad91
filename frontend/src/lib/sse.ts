/**
 * Server-sent events over `fetch`: an incremental parser (chunks in, events out) and
 * an async reader of a response body. EventSource cannot send an Authorization
 * header, so the studio reads both SSE streams (turns, family events) this way.
 */

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

export interface SseParser {
  /** Feed decoded text; complete events are returned in order. */
  push(chunk: string): SseEvent[];
  /** End of stream: an event not closed by a blank line is dropped, as the spec says. */
  end(): SseEvent[];
}

export function createSseParser(): SseParser {
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | null = null;
  let hasData = false;

  function line(text: string, out: SseEvent[]): void {
    if (text === "") {
      if (hasData) out.push({ event: event || "message", data: data.join("\n"), id });
      event = "";
      data = [];
      hasData = false;
      return;
    }
    if (text.startsWith(":")) return; // a comment (keepalive)
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") {
      data.push(value);
      hasData = true;
    } else if (field === "id") id = value;
  }

  return {
    push(chunk) {
      buffer += chunk;
      const out: SseEvent[] = [];
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (match === null) break;
        // A lone "\r" at the end may be the first half of "\r\n": wait for more.
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        line(buffer.slice(0, match.index), out);
        buffer = buffer.slice(match.index + match[0].length);
      }
      return out;
    },
    end() {
      const out: SseEvent[] = [];
      if (buffer !== "") line(buffer, out);
      buffer = "";
      return out;
    },
  };
}

/** The events of an SSE response body, as they arrive. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = createSseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
    yield* parser.end();
  } finally {
    reader.releaseLock();
  }
}

/** `data` as JSON, or null when it is not JSON. */
export function parseData<T>(event: SseEvent): T | null {
  try {
    return JSON.parse(event.data) as T;
  } catch {
    return null;
  }
}
