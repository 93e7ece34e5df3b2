"""Setting a host up, apart from serving: ``mcp-ref-fs print-config`` and ``mcp-ref-fs install``.

:mod:`.hostconfig` builds the host's entry (the command, the roots, the server options passed
through) and writes it into the host's own file; :mod:`.jsonedit` merges one entry into a JSON(C)
file, every other byte kept. Nothing here is imported while the server serves.
"""
