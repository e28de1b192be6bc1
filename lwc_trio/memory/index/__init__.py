"""The write side: the `Wiki` facade, document indexing, the analysis process, the graph."""
