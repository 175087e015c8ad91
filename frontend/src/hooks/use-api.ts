"use client";
import { createContext, useContext } from "react";
import type { Client, TokenStore } from "@/lib/api/client";

export interface ApiContextValue {
  client: Client;
  tokens: TokenStore;
  /** Ask for a token again (a request answered 401). */
  requireSignIn: () => void;
}

export const ApiContext = createContext<ApiContextValue | null>(null);

export function useApi(): ApiContextValue {
  const value = useContext(ApiContext);
  if (value === null) throw new Error("useApi outside <ApiProvider>");
  return value;
}
