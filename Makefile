.PHONY: demo test lint bench generate image
demo:  ## run the embedded demo (simulated gateway, bundled prices, /metrics on :9464)
	scripts/demo.sh
test:  ## set up and run the whole test suite (ruff, mypy, pytest)
	scripts/test.sh
bench:  ## benchmarks side by side with mtail, LiteLLM, prometheus_client; writes docs/performance.md
	scripts/bench.sh
image:  ## build the container image with buildah from a debootstrap base (root; no registry needed)
	scripts/build_image.sh
