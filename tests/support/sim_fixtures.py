"""Simulator fixtures (owned by the simulator area): an in-process Kubernetes API emulator per test."""
