"""Benchmarks that print figures (not part of the test run; run them with python -m bench.<name>)."""
