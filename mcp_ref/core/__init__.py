"""The core: the path one message follows, and what a reader follows first. ``stdio`` (the asyncio
shell around two file descriptors; ``streams``: the byte streams it reads and writes) ->
``session`` (one connection: held input, budgets, requests
in flight, cancellation) -> ``wire`` (framing and JSON-RPC, sans I/O) -> ``dispatcher`` (one
request: era, routing, result, errors; ``control``: the control lane) -> ``context`` / ``meta`` /
``versions`` -> the feature module -> back through ``wire`` to ``stdout`` (the single writer).
``errors`` and ``content`` are what every answer is made of.
"""
