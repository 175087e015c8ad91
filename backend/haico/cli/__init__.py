"""The `haico` command: serve, migrate, users, and the research commands."""
