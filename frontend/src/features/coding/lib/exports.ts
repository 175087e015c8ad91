/**
 * The datasets a family exports beside its CSV: a REFI-QDA project (.qdpx, for
 * ATLAS.ti, NVivo, MAXQDA, QualCoder), the tree of messages (OpenAssistant's JSONL
 * shape), the preferences of the judgments (JSONL), and the analysis table as Parquet.
 * Pure.
 */

export type Dataset = "qdpx" | "tree" | "preferences" | "parquet";

export interface DatasetChoice {
  dataset: Dataset;
  label: string;
  title: string;
}

export const DATASETS: readonly DatasetChoice[] = [
  { dataset: "qdpx", label: "QDPX", title: "The codings as a REFI-QDA project (ATLAS.ti, NVivo, MAXQDA, QualCoder)" },
  { dataset: "tree", label: "Tree", title: "Every message with its parent (tree-shaped JSONL, OpenAssistant's shape)" },
  {
    dataset: "preferences",
    label: "Prefs",
    title: "The judgments as preference pairs (JSONL: prompt, chosen, rejected)",
  },
  { dataset: "parquet", label: "Parquet", title: "The analysis table, typed (Parquet)" },
];

/** The file a dataset downloads as: `haico-<title>-<date>[-tree|-preferences].<ext>`. */
export function datasetFileName(slugged: string, dataset: Dataset): string {
  const base = slugged.replace(/\.[a-z]+$/, "");
  if (dataset === "qdpx") return `${base}.qdpx`;
  if (dataset === "parquet") return `${base}.parquet`;
  return `${base}-${dataset}.jsonl`;
}
