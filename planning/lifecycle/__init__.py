"""Karpenter's NodeClaim lifecycle as pure decisions (launch record, registration, initialization, liveness,
Consolidatable, garbage collection, the conditions disruption writes, drain), and the NodePool's and EC2NodeClass's
part in it (NodePool status, EC2NodeClass drift): each module takes the objects as the API server shows them and
returns what to write. runtime/nodeclaim_lifecycle.py reads the cluster and applies the answers (docs/decisions.md
§19).
"""
