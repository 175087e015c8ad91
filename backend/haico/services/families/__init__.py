"""Families: conversations, the family model (lineage, ownership, visibility), titles, export
and import.
"""
