"""Sources turn bytes into records and know nothing of metrics.

``tail`` follows JSON-lines files through rotation; ``formats`` decode a line
of a given log format into a record; ``otlp`` receives and maps GenAI spans.
"""
