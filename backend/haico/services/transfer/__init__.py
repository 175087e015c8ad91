"""A family as one document: its export, its import, and the ledger inside it."""
