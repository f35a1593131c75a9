.PHONY: setup demo test lint bench
# setup and demo skip the tools only tests use (checkov's .venv-tools, promtool); test installs them too
setup:
	./scripts/setup.sh --without-test-tools
demo: setup
	.venv/bin/nodeflow demo
test:
	./scripts/setup.sh
	.venv/bin/python -m pytest -q -n 4 --dist loadgroup
lint: setup
	.venv/bin/ruff check .
