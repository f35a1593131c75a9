"""Connecting to Temporal: flags or NODEFLOW_TEMPORAL_* environment, TLS / API key, the pydantic converter.

Every client this project builds (worker, CLI, demo, benchmarks) comes from `connect()`, so the data
converter is always the pydantic one the workflows' models need.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import random
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client, TLSConfig
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import LogForwardingConfig, LoggingConfig, MetricBuffer, Runtime, TelemetryConfig

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


log = logging.getLogger(__name__)

class InsecureTemporalAddress(ValueError):
    """A plaintext connection to a Temporal server that is not on this machine: refused unless asked for."""


def is_loopback(address: str) -> bool:
    """`localhost:7233`, `127.0.0.1:7233` or `[::1]:7233`: traffic that never leaves the machine."""
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_transport(address: str, tls: bool, api_key: str | None) -> None:
    """Workflow payloads carry node names, pod lists and cloud ids: never send them in plaintext off the machine."""
    if tls or api_key or is_loopback(address):
        return
    raise InsecureTemporalAddress(
        f"Temporal at {address} is not on loopback and neither TLS nor an API key is set; set "
        "NODEFLOW_TEMPORAL_TLS=true (or a TLS file, or NODEFLOW_TEMPORAL_API_KEY), or pass "
        "--allow-insecure-temporal (NODEFLOW_TEMPORAL_ALLOW_INSECURE=true) if the network is trusted")


_core_logs_forwarded = False


def forward_core_logs(metric_buffer: MetricBuffer | None = None) -> None:
    """Send the SDK core's own log lines (connection errors, poll failures) through Python logging, logger
    `temporalio.core`, instead of straight to the console: the worker formats them as JSON like every other
    line, and the demo keeps them in its log file rather than on the terminal (or in a report on stdout).
    The worker also passes a `metric_buffer` (before it connects) to read the SDK's failure counters."""
    global _core_logs_forwarded
    if _core_logs_forwarded:
        return
    forwarding = LogForwardingConfig(logger=logging.getLogger("temporalio.core"))
    runtime = Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=LoggingConfig.default.filter,
                                                                      forwarding=forwarding),
                                                metrics=metric_buffer))
    Runtime.set_default(runtime, error_if_already_set=False)
    _core_logs_forwarded = True


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


async def connect(address: str | None = None, namespace: str | None = None, *, tls: bool | None = None,
                  tls_cert: str | None = None, tls_key: str | None = None, tls_ca: str | None = None,
                  tls_server_name: str | None = None, api_key: str | None = None,
                  identity: str | None = None, require_secure: bool = False) -> Client:
    """A Temporal client. Unset arguments come from NODEFLOW_TEMPORAL_{ADDRESS,NAMESPACE,API_KEY,TLS,
    TLS_CERT,TLS_KEY,TLS_CA,TLS_SERVER_NAME}; an API key or any TLS file turns TLS on (Temporal Cloud).
    With `require_secure` (the worker's default) a plaintext, non-loopback address is refused."""
    env = os.environ.get
    address = address or env("NODEFLOW_TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
    namespace = namespace or env("NODEFLOW_TEMPORAL_NAMESPACE") or DEFAULT_NAMESPACE
    api_key = api_key or env("NODEFLOW_TEMPORAL_API_KEY") or None
    tls_cert = tls_cert or env("NODEFLOW_TEMPORAL_TLS_CERT") or None
    tls_key = tls_key or env("NODEFLOW_TEMPORAL_TLS_KEY") or None
    tls_ca = tls_ca or env("NODEFLOW_TEMPORAL_TLS_CA") or None
    tls_server_name = tls_server_name or env("NODEFLOW_TEMPORAL_TLS_SERVER_NAME") or None
    if tls is None:
        flag = (env("NODEFLOW_TEMPORAL_TLS") or "").lower()
        tls = flag in ("1", "true", "yes") or bool(api_key or tls_cert or tls_ca)
    if require_secure:
        check_transport(address, bool(tls), api_key)
    tls_config: bool | TLSConfig = False
    if tls:
        if tls_cert or tls_key or tls_ca or tls_server_name:
            tls_config = TLSConfig(server_root_ca_cert=_read(tls_ca), client_cert=_read(tls_cert),
                                   client_private_key=_read(tls_key), domain=tls_server_name)
        else:
            tls_config = True
    forward_core_logs()
    kwargs: dict[str, Any] = {}
    if identity:
        kwargs["identity"] = identity
    return await Client.connect(address, namespace=namespace, tls=tls_config, api_key=api_key,
                                data_converter=pydantic_data_converter, **kwargs)


async def connect_patiently(limit_seconds: float, **kwargs: Any) -> Client:
    """`connect`, retried while the server cannot be reached (a Temporal restart, a rolling upgrade of its
    frontend), 0.5 s doubling to 10 s with full jitter, until `limit_seconds`; then the last error is raised. A worker
    waits for its server rather than exit (a process that exits on a restart it could ride out turns one fault into
    a crash loop). What retrying cannot fix (an insecure address, a bad certificate file) is raised at once."""
    deadline = time.monotonic() + limit_seconds
    delay = 0.5
    while True:
        try:
            return await connect(**kwargs)
        except RuntimeError as exc:  # the SDK's bridge: "Failed client connect: ... Connection refused"
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            log.warning("Temporal not reachable, retrying in up to %.1fs: %s", min(delay, left), exc)
            await asyncio.sleep(min(random.uniform(0, delay), left))
            delay = min(delay * 2, 10.0)
