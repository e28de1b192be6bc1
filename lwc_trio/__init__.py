"""lwc_trio: an MCP memory-and-code server for coding agents, on Trio."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lwc-trio")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]
