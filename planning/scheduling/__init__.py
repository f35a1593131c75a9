"""Where pods would go: the scheduling simulation (simulation.py) over existing nodes and the nodes a NodePool could
add, and the kube-scheduler and Karpenter rules it evaluates (affinity, topology spread, host ports, volume topology,
preference relaxation, the node filters of one pod). docs/semantics.md §3.5.
"""
