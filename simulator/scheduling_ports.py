"""kube-scheduler's NodePorts filter: a pod's host ports against the ports the node's pods already hold.

A host port is (hostIP, protocol, hostPort) with an empty IP read as 0.0.0.0 and an empty protocol as TCP
(framework.HostPortInfo.sanitize). 0.0.0.0 conflicts with the same protocol and port on any IP; another IP
conflicts with itself and with 0.0.0.0 (HostPortInfo.CheckConflict). Ports come from the containers and from
sidecars (init containers with `restartPolicy: Always`), never from plain init containers, which have exited
before the pod runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ANY_IP = "0.0.0.0"
HostPort = tuple[str, str, int]  # (ip, protocol, port)
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def host_ports(pod: dict[str, Any]) -> list[HostPort]:
    spec = pod.get("spec") or {}
    containers = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    containers += list(spec.get("containers") or ())
    out = []
    for c in containers:
        for p in c.get("ports") or ():
            port = int(p.get("hostPort") or 0)
            if port > 0:
                out.append((p.get("hostIP") or ANY_IP, p.get("protocol") or "TCP", port))
    return out


def conflicts(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> bool:
    """Whether any wanted port collides with a used one."""
    held = set(used)
    if not held:
        return False
    by_proto_port: dict[tuple[str, int], set[str]] = {}
    for ip, proto, port in held:
        by_proto_port.setdefault((proto, port), set()).add(ip)
    for ip, proto, port in wanted:
        ips = by_proto_port.get((proto, port))
        if ips and (ip == ANY_IP or ANY_IP in ips or ip in ips):
            return True
    return False
