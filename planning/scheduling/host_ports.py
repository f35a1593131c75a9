"""Host ports: a pod asking for a hostPort another pod on the node holds cannot go there (kube NodePorts).

kube's HostPortInfo: a (protocol, hostIP, port) conflicts with one of the same protocol and port when the IPs are
equal or either is 0.0.0.0 (an empty hostIP means 0.0.0.0, an empty protocol TCP). Containers and sidecar init
containers (`restartPolicy: Always`) hold ports; plain init containers have exited before the pod runs.
Karpenter's hostportusage.go keeps the same table per node. docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HostPort = tuple[str, str, int]  # protocol, host IP, port
ANY_IP = "0.0.0.0"


def host_ports(spec: Mapping[str, Any]) -> frozenset[HostPort]:
    """The (protocol, hostIP, hostPort) triples a pod holds on its node."""
    out: set[HostPort] = set()
    containers = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for c in containers:
        for p in c.get("ports") or ():
            port = int(p.get("hostPort") or 0)
            if port > 0:
                out.add((p.get("protocol") or "TCP", p.get("hostIP") or ANY_IP, port))
    return frozenset(out)


def conflicts(mine: Iterable[HostPort], theirs: Iterable[HostPort]) -> bool:
    """Whether any of `mine` collides with any of `theirs`."""
    held: dict[tuple[str, int], set[str]] = {}
    for proto, ip, port in theirs:
        held.setdefault((proto, port), set()).add(ip)
    for proto, ip, port in mine:
        ips = held.get((proto, port))
        if ips and (ip == ANY_IP or ANY_IP in ips or ip in ips):
            return True
    return False
