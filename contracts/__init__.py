"""Temporal payloads, error types and search attributes: what workflows, activities and clients exchange.

Below workflows/ and activities/ so that both import it and neither imports the other's way back; plain pydantic
models and enums, sandbox-safe, whose serialized shape recorded histories depend on (docs/contracts.md).
"""
