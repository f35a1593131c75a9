"""Which EC2 instances are this simulated cluster's nodes: those whose bootstrap names it (docs/architecture.md,
"Simulated kubelets and CCM"). Simulators in one test process share a moto_server, so this is also what keeps
one cluster from registering another's instances.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from simulator.user_data import Bootstrap

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass
class ClusterIdentity:
    """How a node's bootstrap names this cluster: the API server URL, and the cluster name when one is set."""

    url: str = ""
    name: str | None = None

    def named_by(self, boot: Bootstrap) -> bool:
        if self.url and boot.api_server and same_endpoint(boot.api_server, self.url):
            return True
        return bool(self.name) and boot.cluster_name == self.name


def same_endpoint(a: str, b: str) -> bool:
    """Two API server URLs reach the same server: scheme, host and port equal; loopback aliases are one host
    (the simulator listens on 127.0.0.1 or 0.0.0.0, a worker may call it localhost)."""
    return _key(a) == _key(b) and _key(a) != ("", "", 0)


def _key(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return ("", "", 0)
    host = (parts.hostname or "").lower()
    return (parts.scheme.lower(), "loopback" if host in _LOOPBACK else host, port)
