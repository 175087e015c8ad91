/**
 * Which ends of the path on screen are recorded as the user's chosen path (the studio
 * records the end of the path shown, `PUT …/chosen-path`). Pure: the hook
 * (useChosenPath) asks it and sends what it answers.
 *
 * - An end is sent once: again only after another one was sent in between. Compared with
 *   what was last sent, not with the last answer, so that a choice made while earlier
 *   ones are on their way is not taken as recorded, nor an earlier one left to land last.
 * - A move the page makes itself (a path opened) is sent before it is made (`moveTo`),
 *   so that a reload right after it opens on the new path. Until the page shows it, the
 *   ends on screen are the path being left, or a cached answer from before the move:
 *   none of them is sent. A move that never shows stops holding them back after
 *   `settleMs`.
 */
export class ChosenRecorder {
  private sent: { family: string; node: string } | null = null;
  private moving: { node: string; since: number } | null = null;

  constructor(
    private readonly settleMs = 10_000,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The path on screen ends at `end` in `family`, whose remembered end the server last
   * answered as `known`: the node to send, or null. */
  shown(family: string, end: string, known: string | null): string | null {
    if (this.moving !== null) {
      if (end !== this.moving.node && this.now() - this.moving.since < this.settleMs) return null;
      this.moving = null;
    }
    const last = this.sent?.family === family ? this.sent.node : known;
    if (last === end) return null;
    this.sent = { family, node: end };
    return end;
  }

  /** The page is about to show `node`'s path: it is sent now (the caller sends it). */
  moveTo(family: string, node: string): void {
    this.moving = { node, since: this.now() };
    this.sent = { family, node };
  }

  /** The move's record failed: the server holds what it held before, so nothing is sent
   * again; ends on screen are compared with its answer from now on (the move's own end,
   * once it shows, is sent then). */
  recordFailed(): void {
    this.moving = null;
    this.sent = null;
  }

  /** The move was not made (a checkout refused): the end on screen is sent again
   * (returned, null when there is none). */
  moveFailed(family: string | null, end: string | null): string | null {
    this.moving = null;
    this.sent = null;
    if (family === null || end === null) return null;
    this.sent = { family, node: end };
    return end;
  }
}

/** What a move's record needs from the page (useChosenPath): the chosen path's PUT, waited
 * for or not, the family and end on screen at the time, and the move itself. */
export interface MoveRecording {
  /** records `node` as the family's chosen end (`PUT …/chosen-path`) */
  record: (node: string) => Promise<unknown>;
  /** the same request, not waited for */
  recordLater: (node: string) => void;
  onScreen: () => { family: string | null; end: string | null };
  /** makes the move; resolves to whether it happened */
  move: () => Promise<boolean>;
}

/** A move the page makes to `node` in `family`, recorded before it is made (`moveTo`):
 * the record, then the move; a move not made has the end on screen recorded again. A
 * record that fails sends nothing more: the move is made (the PUT and the checkout). */
export async function moveRecorded(
  recorder: ChosenRecorder,
  family: string,
  node: string,
  io: MoveRecording,
): Promise<boolean> {
  const again = () => {
    const now = io.onScreen();
    const end = recorder.moveFailed(now.family, now.end);
    if (end !== null) io.recordLater(end);
  };
  recorder.moveTo(family, node);
  try {
    await io.record(node);
  } catch {
    recorder.recordFailed();
    return io.move();
  }
  const moved = await io.move();
  if (!moved) again();
  return moved;
}
