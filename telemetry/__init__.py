"""Prometheus metrics and structured logs: leaf definitions every layer may record to."""
