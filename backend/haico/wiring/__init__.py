"""A serving process's wiring: the long-lived handles the faces use, and the workers main.py
starts.
"""
