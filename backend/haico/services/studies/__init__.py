"""Studies: one task given to many participants, each in a family of its own under one
of the study's conditions, read by the study's owner and members."""
