"""Price tables: the model (``table``: versions, families, rates, lookups and the
YAML loader with file:line:key refusals), where a model's rates come from
(``explain``) and ``importers`` (one module per upstream source, each converting
into that model)."""
