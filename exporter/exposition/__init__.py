"""Exposition: aggregates rendered for scrapers (``render``: Prometheus text and
OpenMetrics), the HTTP server that serves them (``server``) and the optional
OTLP metrics push (``otlp_push``)."""
