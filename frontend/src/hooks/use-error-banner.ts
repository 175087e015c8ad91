"use client";
import { useEffect, useState } from "react";
import { UNREACHABLE } from "@/lib/api/client";

/** The error banner's message (null: none) and its setter. "Could not be reached" is
 * out of date once the family's event stream is `connected` again: it is cleared. */
export function useErrorBanner(connected: boolean) {
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (connected) setError((e) => (e === UNREACHABLE ? null : e));
  }, [connected]);
  return [error, setError] as const;
}
