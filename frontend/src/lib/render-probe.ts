/**
 * Render counts for the browser tests. A test that sets `window.__haicoRenders = {}`
 * before the studio loads gets, under each probed name, how many times that component
 * rendered; without it (every real session) a probe is one property read.
 */
export type RenderCounts = Record<string, number>;

interface ProbedWindow {
  __haicoRenders?: RenderCounts;
}

/** Counts one render of `name` when a test asked for counts. */
export function countRender(name: string, scope: { __haicoRenders?: RenderCounts } | undefined = probeScope()): void {
  const counts = scope?.__haicoRenders;
  if (counts !== undefined) counts[name] = (counts[name] ?? 0) + 1;
}

function probeScope(): ProbedWindow | undefined {
  return typeof window === "undefined" ? undefined : (window as ProbedWindow);
}
