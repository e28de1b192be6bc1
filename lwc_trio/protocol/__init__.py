"""Sans-IO protocol core: framing, JSON-RPC, negotiation, the tool contract.

Nothing in this package imports trio or touches a file descriptor; the actors
in `lwc_trio.actors` feed it bytes and send what it returns.
"""
