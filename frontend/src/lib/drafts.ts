/** Text the user typed that the server did not take, given back to the field it came
 * from: ahead of whatever was typed there since, so neither is lost. */
export function giveBack(lost: string, now: string, separator = "\n"): string {
  return now.trim() ? `${lost}${separator}${now}` : lost;
}

export const DRAFT_PREFIX = "haico.draft.";

export interface DraftStore {
  get(thread: string): string;
  /** an empty text forgets the thread's draft */
  set(thread: string, text: string): void;
}

/** The composer's unsent text per conversation: in session storage when there is a
 * window (it outlives a reload, a sign-in and a switch to another conversation, and
 * stays with its tab), in memory otherwise. */
export function draftStore(storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null): DraftStore {
  const memory = new Map<string, string>();
  return {
    get: (thread) => (storage ? storage.getItem(DRAFT_PREFIX + thread) : memory.get(thread)) ?? "",
    set: (thread, text) => {
      if (!storage) {
        if (text) memory.set(thread, text);
        else memory.delete(thread);
      } else if (text) storage.setItem(DRAFT_PREFIX + thread, text);
      else storage.removeItem(DRAFT_PREFIX + thread);
    },
  };
}
