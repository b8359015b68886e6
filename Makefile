.PHONY: demo test lint bench generate
demo:  ## run the embedded demo (simulated gateway, bundled prices, /metrics on :9464)
	scripts/demo.sh
test:  ## set up and run the whole test suite (ruff, mypy, pytest)
	scripts/test.sh
bench:  ## benchmarks side by side with mtail, LiteLLM, prometheus_client; writes docs/performance.md
	scripts/bench.sh
