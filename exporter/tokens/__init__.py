"""Exact token counts: tiktoken encodings from packaged rank files (``counter``),
the estimator check against them (``verify``) and billed-token factor
calibration (``calibration``)."""
