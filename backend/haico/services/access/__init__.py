"""Who is calling and what they may do: users, tokens and the one access rule."""
