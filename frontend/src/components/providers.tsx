"use client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useEffect, useMemo, useState, type ReactNode } from "react";
import { ApiContext, type ApiContextValue } from "@/hooks/use-api";
import { ApiError, browserTokenStore, makeClient, makeUpload, type ApiOptions } from "@/lib/api/client";
import { linkAwareTokenStore, withoutCredentials } from "@/features/sharing/lib/share-link";
import { captureJoin, participantTokenStore } from "@/features/studies/lib/participant";
import { SignIn } from "./sign-in";

/** The query cache, the typed client and the token-mode sign-in gate. */
export function Providers({ children }: { children: ReactNode }) {
  const [needToken, setNeedToken] = useState(false);
  const tokens = useMemo(() => {
    const w = typeof window === "undefined" ? null : window;
    const session = w?.sessionStorage ?? null;
    // A study's join link (`?join=st_…`) is kept for the tab until the join is done
    // (read before the address bar drops it).
    captureJoin(w?.location.search ?? "", session);
    // A review link's token (`?share=sh_…`) is the tab's until the user signs in; a
    // study participant's token (after a join) before it.
    return participantTokenStore(
      linkAwareTokenStore(browserTokenStore(w?.localStorage ?? null), session, w?.location.search ?? ""),
      session,
    );
  }, []);
  // Once read, a credential leaves the address bar (after mount: the router then
  // takes the new address as its own).
  useEffect(() => {
    const clean = withoutCredentials(window.location.search);
    if (clean !== window.location.search) {
      window.history.replaceState(window.history.state, "", window.location.pathname + clean + window.location.hash);
    }
  }, []);
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            refetchOnWindowFocus: false,
            retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
          },
        },
      }),
  );
  // Every request, stream and upload goes through these: an answer 401 asks for a token.
  const value: ApiContextValue = useMemo(() => {
    const options: ApiOptions = { onUnauthorized: () => setNeedToken(true) };
    return { client: makeClient(tokens, options), tokens, upload: makeUpload(tokens, options) };
  }, [tokens]);
  return (
    <ApiContext.Provider value={value}>
      <QueryClientProvider client={queryClient}>
        {needToken ? (
          <SignIn
            onSubmit={(token) => {
              tokens.set(token);
              setNeedToken(false);
              void queryClient.resetQueries();
            }}
          />
        ) : (
          children
        )}
      </QueryClientProvider>
    </ApiContext.Provider>
  );
}
