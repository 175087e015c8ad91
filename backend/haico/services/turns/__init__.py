"""Turns: the turn manager, opening, the running turn, the stale-turn sweep and the views of
turns.
"""
