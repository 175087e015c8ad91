"""The research ledger: provenance, notes, the analysis export and a path as a document."""
