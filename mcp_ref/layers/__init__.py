"""Layers under the core that a first reading can skip: each makes one step of the core faster
(``fastjson``, ``splice``: the encoder's speed-ups under ``wire``; ``pipesize``: a larger
stdout pipe, so a large answer leaves in fewer writes), bounded against a peer that
floods, stalls or never reads (``idscan``: the id of a line refused unparsed; ``outputbudget``:
large answers per connection; ``stderr``: logs that never block) or portable
(``_stdio_threads``: the transport's thread fallback; ``handlerthreads``: the daemon threads
synchronous handlers run on; ``records``: the public value types' equality and repr without a
dataclass's start-up cost). The core calls them; they need nothing of
the features or the kit.
"""
