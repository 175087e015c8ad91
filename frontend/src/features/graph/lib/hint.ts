/**
 * The graph's one-line hint: what a click, a double-click, a long press and the cards'
 * buttons do, naming only what the page offers (a reader restores nothing; a study's
 * condition may turn restoring, bringing in or the alternatives off). Pure.
 */

export interface HintOffers {
  /** restore (and every write of an editor) */
  restore: boolean;
  merge: boolean;
  whatif: boolean;
}

export function graphHint(edit: boolean, touch: boolean, offers: HintOffers): string {
  if (!edit) return "click: show a step · ⇄ compare two steps";
  const parts = touch
    ? [
        "long-press a step for its menu",
        offers.restore && "↺ restores",
        "⇄ compares two",
        offers.merge && "⤵ brings in",
        offers.whatif && "⋔ tries 3 answers",
      ]
    : [
        offers.restore ? "double-click: restore" : "click: show a step",
        "⇄ compare",
        offers.merge && "⤵ or drop on the head: bring in",
        offers.whatif && "⋔ 3 alternatives",
        "? for keys",
      ];
  return parts.filter(Boolean).join(" · ");
}
