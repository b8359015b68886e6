"""Exact token counts: tiktoken encodings from packaged, hash-checked rank files
(``encodings``), counting by model family with a segment cache (``counter``),
and the estimator check against them (``verify``)."""
