"""llm-savings-exporter: honest, provenance-carrying savings counters for LLM gateways."""

__version__ = "0.1.0"
