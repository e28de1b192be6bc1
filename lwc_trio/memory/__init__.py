"""The memory plane: SQLite Wiki stores, their search engine and the CLI's write API.

Pure synchronous code (never imports trio): the memory-plane worker runs `explore_memory` in a
thread. The folders go by role, lowest first; each imports only from those above it in this
list (docs/architecture.md, "The memory plane"):

- `format/`: the store's format, each with its encoder and decoder: the schema and its
  check, the postings codec, the typo index, slug rules.
- `text/`: text analysis shared by both sides: the tokenizer, link extraction.
- `storage/`: opening stores safely: directory handles, readers and the writer's
  connection, the connection pool, store discovery, revision caches.
- `index/`: the write side: the `Wiki` facade the CLI calls, document indexing, the bulk
  import's analysis process, the graph projection.
- `query/`: the read side: the engine the server runs, search and typo correction,
  result rows, Page passages and the bounds a store's values must keep.
- `exchange/`: Wikis in and out: JSONL and Markdown import/export, folder walks, LWC
  stores.
"""

from lwc_trio.exceptions import MemoryCancelled, StoreError, WikiError
from lwc_trio.memory.query.engine import MemoryQuery, explore_memory
from lwc_trio.memory.text.tokenize import MAX_TERMS, tokenize

__all__ = [
    "MAX_TERMS",
    "MemoryCancelled",
    "MemoryQuery",
    "StoreError",
    "WikiError",
    "explore_memory",
    "tokenize",
]
