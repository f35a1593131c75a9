.PHONY: setup demo test lint bench
setup:
	./scripts/setup.sh
demo: setup
	.venv/bin/nodeflow demo
test: setup
	.venv/bin/python -m pytest -q -n 2 --dist loadgroup
lint: setup
	.venv/bin/ruff check .
