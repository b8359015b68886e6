"""The sidecar process: configuration (``config``), the loop that pumps sources
into the pipeline and serves /metrics (``sidecar``), and its atomic
checkpoints (``checkpoint``)."""
