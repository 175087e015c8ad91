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

  /** The move was not made (a checkout refused) or its record failed: the end on screen
   * is sent again (returned, null when there is none). */
  moveFailed(family: string | null, end: string | null): string | null {
    this.moving = null;
    this.sent = null;
    if (family === null || end === null) return null;
    this.sent = { family, node: end };
    return end;
  }
}
