"""Maintenance rules: the consistency check behind `haico check`."""
