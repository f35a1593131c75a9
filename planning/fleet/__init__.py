"""A fleet rollout in one cluster (docs/fleet.md): the change it makes and where the cluster is in it.
"""
