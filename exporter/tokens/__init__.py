"""Exact token counts: tiktoken encodings from packaged, hash-checked rank files
(``encodings``), counting by model family with a segment cache (``counter``),
the estimator check against them (``verify``) and billed-token factor
calibration (``calibration``)."""
