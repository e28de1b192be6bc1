"""lwc_trio: an MCP memory-and-code server for coding agents, on Trio."""

__version__ = "0.1.0"
"""The package version (also the server's `serverInfo.version`); the build reads it from here."""

__all__ = ["__version__"]
