"""History: heads and checkout, branching, the graph, the chosen path and step labels."""
