"""The read side: the engine, search and typo correction, results, passages and bounds."""
