"""Datasets: a family's (or a study's) steps, codings, notes and judgments written in
the formats other tools read: REFI-QDA `.qdpx`, tree and preference JSONL, Parquet."""
