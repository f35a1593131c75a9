"""Free loopback ports and the wait for a server the tests start: devstack's own, so the suite and the demo stack
wait alike."""

from devstack.processes import free_port, wait_for_port

__all__ = ["free_port", "wait_for_port"]
