"""Which nodes to disrupt and how: the candidates, one module per disruption method behind the one interface of
method.py (emptiness, drift, expiration, consolidation single- and multi-node, the optimizer, repair, static drift),
the commands they produce, and the validation of a command before it starts. docs/semantics.md §3-§6.
"""
