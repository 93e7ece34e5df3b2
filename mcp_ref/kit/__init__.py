"""The author's kit: what a server author uses beside the API, never on a request's path.
``testing`` (a client for tests, in process or over stdio), ``typed`` (a tool's schemas derived
from its handler's annotations) and ``request`` (``mcp-ref-request``: request lines for a shell).
"""
