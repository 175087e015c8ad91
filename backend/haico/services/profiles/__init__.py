"""Model profiles: a user's named agent settings, and the profile a branch's turns run with."""
