"""Benchmarks are run by hand (python tests/bench/bench_tokens.py), never collected."""

collect_ignore_glob = ["bench_*.py"]
