"""The protocol features: what the dispatcher routes a method to, one module per spec page, with
their helpers. ``discover``, ``tools`` (+ ``schemas``), ``resources`` (+ ``uritemplate``),
``prompts``, ``completion``, ``pagination``, ``caching``, ``subscriptions`` + ``watch``,
``mrtr`` + ``requeststate`` (``sealing``: the one HMAC), ``legacy`` + ``legacyinput`` +
``outgoing`` (the initialize era) and ``tasks`` (the tasks extension).
"""
