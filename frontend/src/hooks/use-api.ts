"use client";
import { createContext, useContext } from "react";
import type { Client, TokenStore, Upload } from "@/lib/api/client";

export interface ApiContextValue {
  client: Client;
  tokens: TokenStore;
  /** an upload with progress, through the client's token and 401 handler */
  upload: Upload;
}

export const ApiContext = createContext<ApiContextValue | null>(null);

export function useApi(): ApiContextValue {
  const value = useContext(ApiContext);
  if (value === null) throw new Error("useApi outside <ApiProvider>");
  return value;
}
