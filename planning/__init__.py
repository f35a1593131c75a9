"""Pure decision logic: what the planner, the provisioner and the NodeClaim lifecycle decide, on plain objects (no
Temporal, Kubernetes or AWS clients; docs/architecture.md). The shared views stay here: cluster.py (an indexed
snapshot), selectors.py (label selectors, node requirements, tolerations) and pod_requests.py (a pod's requests);
each package below decides one concern.
"""
