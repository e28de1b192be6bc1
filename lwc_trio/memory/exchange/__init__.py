"""Wikis in and out: JSONL and Markdown import/export, folder walks, LWC stores."""
