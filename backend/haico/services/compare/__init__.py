"""Comparing two nodes, two paths, and a branch's net change."""
