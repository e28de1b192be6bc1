"""The store's format: schema and checks, the postings codec, the typo index, slug rules."""
