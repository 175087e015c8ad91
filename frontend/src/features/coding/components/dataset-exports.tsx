"use client";
import { DATASETS, type Dataset } from "@/features/coding/lib/exports";

/** The family's datasets beside its CSV export: a small menu of four downloads. */
export function DatasetExports({ title, onExport }: { title: string; onExport: (dataset: Dataset) => void }) {
  return (
    <details className="dataset-menu" data-testid="dataset-menu">
      <summary
        className="icon csv"
        title="Datasets: QDPX for QDA tools, tree and preference JSONL, Parquet"
        aria-label={`Data: the datasets of “${title}”`}
      >
        Data <span aria-hidden="true">▾</span>
      </summary>
      <div className="dataset-list" role="group" aria-label="Datasets">
        {DATASETS.map((d) => (
          <button
            key={d.dataset}
            type="button"
            className="link"
            data-testid={`dataset-export-${d.dataset}`}
            title={d.title}
            onClick={() => onExport(d.dataset)}
          >
            {d.label}
          </button>
        ))}
      </div>
    </details>
  );
}
