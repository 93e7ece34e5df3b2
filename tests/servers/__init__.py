"""Small example servers the wire tests run as subprocesses (``python -m tests.servers.<name>``).

They use only the public ``mcp_ref`` API, so they double as examples of how a server is written.
"""
