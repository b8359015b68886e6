"""The engine: the one place records become counts.

A records way through it: ``records``/``fastparse`` (record v1, validated) ->
``usage`` (provider usage shapes, disjoint tiers) -> ``dedupe`` (request ids
inside the window) -> ``pipeline`` (price lookup, labels, routes) ->
``aggregate`` (integer sums per cell under frozen rates; dollars derived).
Pure arithmetic and state; no files, sockets or clocks of its own.
"""
