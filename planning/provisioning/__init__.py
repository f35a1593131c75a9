"""What to launch: NodeClaims for pending pods (provisioner.py), static NodePools' replicas, the spot pre-spin's
size and the spot fallback record and cap. docs/semantics.md §11, §14, §15.5.
"""
