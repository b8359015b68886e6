"""Input formats that map onto the canonical record v1 (docs/record-format.md).

Each format is a pure function ``to_canonical(obj) -> dict`` whose output
``exporter.engine.records.parse_object`` validates, so validation has one path:

- ``exporter.sources.formats.litellm``: LiteLLM's StandardLoggingPayload
  (``to_canonical``, ``detect`` for ``--format auto``);
- ``exporter.sources.formats.mapping``: a user YAML field mapping
  (``load_mapping(path).apply``).

Also ``registry``: a format name -> its line decoder.
"""
