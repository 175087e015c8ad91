"""Pieces of a serving process that no layer owns: memory, signals, sockets, background-task
stopping and log redaction.
"""
