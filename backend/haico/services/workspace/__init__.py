"""The workspace: live edits, items, snapshots and its state at one point."""
