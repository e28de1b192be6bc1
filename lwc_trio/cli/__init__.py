"""The `lwc` command line: the server's front door and the Wiki's write side."""
