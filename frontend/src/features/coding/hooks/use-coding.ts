"use client";
import { createContext, useCallback, useContext, useMemo, useState } from "react";
import {
  byNode,
  chipsByNode,
  codeIndex,
  liveCodes,
  type BookCode,
  type Coding,
  type CodingField,
} from "@/features/coding/lib/codings";
import { messageOf } from "@/lib/api/client";
import { useCodebooks, useCodingActions, useCodings } from "./use-coding-data";
import { selectionTarget } from "./use-text-selection";

/** What a picker codes: a step, or a span (code points) of one of its fields, and
 * where on screen it was asked for (the picker opens there). */
export interface CodingTarget {
  nodeId: string;
  span: { field: CodingField; start: number; end: number } | null;
  /** the selected text, shown in the picker */
  quote: string | null;
  at: { x: number; y: number };
  /** the element the focus goes back to once the picker closes */
  returnTo: HTMLElement | null;
}

/** The family's coding as the page shows it: the codes, the codings by step and the
 * cards' chips (each coding says whether it is the caller's: `mine`), the blind
 * state, and the picker. */
export interface CodingView {
  /** the caller may code (the owner, an editor, a commenter) */
  canCode: boolean;
  /** the caller owns the family, or runs its study (reveals its codings, reads the agreement) */
  owner: boolean;
  revealed: boolean;
  /** the study the family belongs to (its owner reveals for the whole study), by name */
  study: string | null;
  /** the caller sees only their own codings (blind, and not the owner) */
  blindForMe: boolean;
  codes: ReadonlyMap<number, BookCode>;
  live: readonly BookCode[];
  codings: readonly Coding[];
  byNode: ReadonlyMap<string, Coding[]>;
  chips: ReadonlyMap<string, string[]>;
  open: (target: CodingTarget) => void;
  remove: (codingId: number) => void;
}

const NONE: CodingView = {
  canCode: false,
  owner: false,
  revealed: false,
  study: null,
  blindForMe: false,
  codes: new Map(),
  live: [],
  codings: [],
  byNode: new Map(),
  chips: new Map(),
  open: () => undefined,
  remove: () => undefined,
};

export const CodingContext = createContext<CodingView>(NONE);

export function useCodingView(): CodingView {
  return useContext(CodingContext);
}

/** The family's coding for the page (`familyRoot` null: no family on screen). */
export function useFamilyCoding({
  familyRoot,
  owner,
  revealed,
  canCode,
  study = null,
  onError,
}: {
  familyRoot: string | null;
  owner: boolean;
  /** null: not known yet (the family's conversation has not loaded) */
  revealed: boolean | null;
  canCode: boolean;
  study?: string | null;
  onError: (message: string) => void;
}) {
  const books = useCodebooks(familyRoot, familyRoot !== null);
  const codings = useCodings(familyRoot, revealed === true);
  const actions = useCodingActions();
  const [target, setTarget] = useState<CodingTarget | null>(null);
  const blindForMe = !owner && revealed === false;

  const { remove: removeCoding, code } = actions;
  const remove = useCallback(
    (id: number) => void removeCoding(id).catch((e: unknown) => onError(messageOf(e))),
    [removeCoding, onError],
  );
  const close = useCallback(() => {
    target?.returnTo?.focus();
    setTarget(null);
  }, [target]);
  const apply = useCallback(
    async (codeId: number, memo: string) => {
      if (target === null) return;
      try {
        await code({ nodeId: target.nodeId, codeId, span: target.span, memo });
        window.getSelection()?.removeAllRanges();
        close();
      } catch (e) {
        onError(messageOf(e));
      }
    },
    [target, code, close, onError],
  );

  // The key `k`: the selected text, else the focused message's step, else the step
  // selected on the graph.
  const fromKeyboard = useCallback(
    (graphSelection: string | null) => {
      if (!canCode) return;
      const picked = selectionTarget();
      if (picked) return setTarget(picked);
      const focused = document.activeElement;
      const message =
        focused instanceof HTMLElement
          ? focused.closest<HTMLElement>('[data-testid="chat-message"][data-node-id]')
          : null;
      const nodeId = message?.dataset.nodeId || graphSelection;
      if (!nodeId) return;
      const anchor =
        message ??
        document.querySelector<HTMLElement>(`[data-testid="graph-node"][data-node-id="${CSS.escape(nodeId)}"]`);
      const box = anchor?.getBoundingClientRect();
      setTarget({
        nodeId,
        span: null,
        quote: null,
        at: { x: box?.left ?? 16, y: box ? Math.min(box.bottom, box.top + 40) : 80 },
        returnTo: focused instanceof HTMLElement ? focused : null,
      });
    },
    [canCode],
  );

  const view = useMemo<CodingView>(() => {
    const index = codeIndex(books.data ?? []);
    const list = codings.data ?? [];
    return {
      canCode,
      owner,
      revealed: revealed === true,
      study,
      blindForMe,
      codes: index,
      live: liveCodes(books.data ?? []),
      codings: list,
      byNode: byNode(list),
      chips: chipsByNode(list, index),
      open: setTarget,
      remove,
    };
  }, [books.data, codings.data, canCode, owner, revealed, study, blindForMe, remove]);

  return { view, target, close, apply, applying: actions.coding, actions, books, fromKeyboard };
}
