"use client";
import { useCallback } from "react";
import { useApi } from "@/hooks/use-api";
import { unwrap } from "@/lib/api/client";
import { exportFileName } from "@/lib/research";
import { saveFile } from "@/lib/save-file";
import { datasetFileName, type Dataset } from "@/features/coding/lib/exports";

const ACCEPT: Record<Dataset, string> = {
  qdpx: "application/zip",
  tree: "application/x-ndjson",
  preferences: "application/x-ndjson",
  parquet: "application/vnd.apache.parquet",
};

/** Download one of a family's datasets (`…/export.qdpx`, `…/export.jsonl?format=`,
 * `…/export.parquet`) as a file. */
export function useDatasetExport() {
  const { client } = useApi();
  return useCallback(
    async (threadId: string, title: string, dataset: Dataset): Promise<void> => {
      const params = { path: { thread_id: threadId } };
      const options = { headers: { Accept: ACCEPT[dataset] }, parseAs: "blob" as const };
      const blob = unwrap(
        dataset === "qdpx"
          ? await client.GET("/api/conversations/{thread_id}/export.qdpx", { params, ...options })
          : dataset === "parquet"
            ? await client.GET("/api/conversations/{thread_id}/export.parquet", { params, ...options })
            : await client.GET("/api/conversations/{thread_id}/export.jsonl", {
                params: { ...params, query: { format: dataset } },
                ...options,
              }),
      );
      saveFile(blob, datasetFileName(exportFileName(title, new Date(), "csv"), dataset));
    },
    [client],
  );
}
