"""Text analysis shared by the write and the read side: the tokenizer, link extraction."""
