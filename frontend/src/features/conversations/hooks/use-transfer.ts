"use client";
import { useCallback, useState } from "react";
import { useApi } from "@/hooks/use-api";
import { unwrap, type Conversation } from "@/lib/api/client";
import { saveFile } from "@/lib/save-file";
import { exportFileName, uploadErrorMessage, type ExportFormat } from "@/lib/research";
import { useDatasetExport } from "@/features/coding/hooks/use-dataset-export";
import type { Dataset } from "@/features/coding/lib/exports";

export interface ImportProgress {
  fileName: string;
  loaded: number;
  total: number;
}

/** Export a family as a file download (`GET …/export` for the whole family as JSON,
 * `GET …/export.csv` for the analysis table, one row per step, or one of the coding
 * datasets: .qdpx, tree or preference JSONL, Parquet), and import one from a file with
 * upload progress (`POST /api/conversations/import`). */
export function useTransfer() {
  const { client, upload } = useApi();
  const [progress, setProgress] = useState<ImportProgress | null>(null);
  const dataset = useDatasetExport();

  const exportFamily = useCallback(
    async (threadId: string, title: string, format: ExportFormat | Dataset = "json"): Promise<void> => {
      if (format !== "json" && format !== "csv") return dataset(threadId, title, format);
      const params = { path: { thread_id: threadId } };
      const blob = unwrap(
        format === "csv"
          ? await client.GET("/api/conversations/{thread_id}/export.csv", {
              params,
              headers: { Accept: "text/csv" },
              parseAs: "blob",
            })
          : await client.GET("/api/conversations/{thread_id}/export", {
              params,
              headers: { Accept: "application/json" },
              parseAs: "blob",
            }),
      );
      saveFile(blob, exportFileName(title, new Date(), format));
    },
    [client, dataset],
  );

  const importFile = useCallback(
    async (file: File): Promise<Conversation> => {
      setProgress({ fileName: file.name, loaded: 0, total: file.size });
      const { status, text } = await upload("/api/conversations/import", file, (p) =>
        setProgress({ fileName: file.name, ...p }),
      ).finally(() => setProgress(null));
      if (status < 200 || status >= 300) throw new Error(uploadErrorMessage(status, text));
      try {
        return JSON.parse(text) as Conversation;
      } catch {
        throw new Error("The server's answer to the import could not be read.");
      }
    },
    [upload],
  );

  return { exportFamily, importFile, progress };
}
