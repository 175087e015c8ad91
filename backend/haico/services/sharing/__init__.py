"""Sharing a family with a named user or through a link."""
