"use client";
import { useCallback, useState } from "react";
import { useApi } from "./use-api";
import { authHeaders, toApiError, type Conversation } from "@/lib/api/client";
import { exportFileName, uploadErrorMessage } from "@/lib/research";

export interface ImportProgress {
  fileName: string;
  loaded: number;
  total: number;
}

/** Export a family as a file download (`GET …/export`, with the token in token mode),
 * and import one from a file with upload progress (`POST /api/conversations/import`). */
export function useTransfer() {
  const { tokens, requireSignIn } = useApi();
  const [progress, setProgress] = useState<ImportProgress | null>(null);

  const exportFamily = useCallback(
    async (threadId: string, title: string): Promise<void> => {
      const res = await fetch(`/api/conversations/${encodeURIComponent(threadId)}/export`, {
        headers: { Accept: "application/json", ...authHeaders(tokens) },
      });
      if (res.status === 401) requireSignIn();
      if (!res.ok) {
        let body: unknown = null;
        try {
          body = await res.json();
        } catch {
          // no JSON body
        }
        throw toApiError(res.status, body);
      }
      const blob = await res.blob();
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = exportFileName(title, new Date());
      a.style.display = "none";
      document.body.appendChild(a);
      a.click();
      a.remove();
      window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
    },
    [tokens, requireSignIn],
  );

  const importFile = useCallback(
    (file: File): Promise<Conversation> =>
      new Promise((resolve, reject) => {
        const xhr = new XMLHttpRequest();
        xhr.open("POST", "/api/conversations/import");
        xhr.setRequestHeader("Content-Type", "application/json");
        xhr.setRequestHeader("Accept", "application/json");
        for (const [k, v] of Object.entries(authHeaders(tokens))) xhr.setRequestHeader(k, v);
        setProgress({ fileName: file.name, loaded: 0, total: file.size });
        xhr.upload.onprogress = (e) =>
          setProgress({ fileName: file.name, loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
        xhr.onload = () => {
          setProgress(null);
          if (xhr.status === 401) requireSignIn();
          if (xhr.status >= 200 && xhr.status < 300) {
            try {
              resolve(JSON.parse(xhr.responseText) as Conversation);
            } catch {
              reject(new Error("The server's answer to the import could not be read."));
            }
          } else reject(new Error(uploadErrorMessage(xhr.status, xhr.responseText)));
        };
        xhr.onerror = () => {
          setProgress(null);
          reject(new Error(uploadErrorMessage(0, "")));
        };
        xhr.send(file);
      }),
    [tokens, requireSignIn],
  );

  return { exportFamily, importFile, progress };
}
