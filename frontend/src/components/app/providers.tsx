"use client";
import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useMemo, useState, type ReactNode } from "react";
import { ApiContext, type ApiContextValue } from "@/hooks/use-api";
import { ApiError, browserTokenStore, makeClient } from "@/lib/api/client";
import { linkAwareTokenStore } from "@/lib/share-link";
import { SignIn } from "./sign-in";

/** The query cache, the typed client and the token-mode sign-in gate. */
export function Providers({ children }: { children: ReactNode }) {
  const [needToken, setNeedToken] = useState(false);
  const tokens = useMemo(() => {
    const w = typeof window === "undefined" ? null : window;
    // A review link's token (`?share=sh_…`) is the tab's until the user signs in.
    return linkAwareTokenStore(
      browserTokenStore(w?.localStorage ?? null),
      w?.sessionStorage ?? null,
      w?.location.search ?? "",
    );
  }, []);
  const [queryClient] = useState(() => {
    const on401 = (error: unknown) => {
      if (error instanceof ApiError && error.status === 401) setNeedToken(true);
    };
    return new QueryClient({
      queryCache: new QueryCache({ onError: on401 }),
      defaultOptions: {
        queries: {
          staleTime: 5_000,
          refetchOnWindowFocus: false,
          retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
        },
      },
    });
  });
  const value: ApiContextValue = useMemo(
    () => ({ client: makeClient(tokens), tokens, requireSignIn: () => setNeedToken(true) }),
    [tokens],
  );
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
