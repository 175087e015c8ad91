/**
 * The way back from a restore (useWayBack): which step a restore of `nodeId` leaves,
 * to be remembered as the way back. From the head, or, when the page already shows a
 * restored step, the step the first restore left (a second restore does not make the
 * way back lead to the first). Null when there is nothing to go back to.
 */
export function stepLeft(
  now: { restored: boolean; left: string | null; head: string | null },
  nodeId: string,
): string | null {
  const from = now.restored ? now.left : now.head;
  return from !== null && from !== nodeId ? from : null;
}
