"""Bring a path back (merge and pick): a pure planner (`plan`), the three states it
plans from (`sides`) and the one-transaction apply (`service`)."""
