"""Big trees: branch summaries, pruning suggestions and pruning."""
