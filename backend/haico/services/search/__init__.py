"""Search across every branch of the caller's conversations."""
