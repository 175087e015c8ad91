"use client";
import { useEffect, useLayoutEffect, useRef } from "react";
import { actionOf, isTyping, type KeyAction } from "@/lib/keymap";

/**
 * The page's keys (lib/keymap, scope "page"): each calls its handler when the focus is
 * not in a text field; Escape in a text field only leaves the field. The handlers are
 * read at key time, so the listener is added once.
 */
export function usePageKeys(handlers: Partial<Record<KeyAction, () => void>>) {
  const ref = useRef(handlers);
  useLayoutEffect(() => {
    ref.current = handlers;
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented) return;
      const target = e.target instanceof Element ? e.target : null;
      if (isTyping(target)) {
        if (e.key === "Escape" && target instanceof HTMLElement && !target.closest("[data-keeps-escape]"))
          target.blur();
        return;
      }
      // the confirm and merge dialogs keep their keys (their own buttons); Escape closes them
      if (target?.closest('[role="alertdialog"], .merge-dialog') && e.key !== "Escape") return;
      const action = actionOf(e, "page");
      const handler = action ? ref.current[action] : undefined;
      if (!handler) return;
      e.preventDefault();
      handler();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}
