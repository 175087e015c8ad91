"use client";
import { Suspense } from "react";
import { Router } from "./router";

// One page, routed by query parameters (`/?thread=th_…`), so the static export
// needs no server routes.
export default function Page() {
  return (
    <Suspense fallback={<div className="loading-screen">Loading…</div>}>
      <Router />
    </Suspense>
  );
}
