"""The memory plane: SQLite Wiki stores, their search engine and the CLI's write API.

Pure synchronous code (never imports trio): the memory-plane worker runs `explore_memory` in a
thread. Modules: `schema` (format, DDL), `store` (opening, transactions), `tokenize` (the
analyzer), `indexer` (the search index's write side), `links`, `search` + `fuzzy` (ranking),
`results` (rows, bodies, caps), `graph`, `discovery`, `engine` (the entry point), `writer`,
`transfer` and `walk` (the CLI's write side; `walk` picks a folder import's files).
"""

from lwc_trio.exceptions import MemoryCancelled, StoreError, WikiError
from lwc_trio.memory.engine import MemoryQuery, explore_memory
from lwc_trio.memory.tokenize import MAX_TERMS, tokenize

__all__ = [
    "MAX_TERMS",
    "MemoryCancelled",
    "MemoryQuery",
    "StoreError",
    "WikiError",
    "explore_memory",
    "tokenize",
]
