"""What a researcher takes away: the analysis table and a path as a document."""
