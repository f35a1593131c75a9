"""Where pods would go: the scheduling simulation (simulation.py) over existing nodes and the nodes a NodePool could
add, the kube-scheduler and Karpenter rules it evaluates (affinity, topology spread, host ports, volume topology,
preference relaxation, the node filters of one pod), and whether a NodePool's EC2NodeClass lets it launch at all.
docs/semantics.md §3.5.
"""
