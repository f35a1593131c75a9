"""The planner pass: one pass over a snapshot and the dry run (plan.py), every node accounted for, the re-check of
a command before it starts, and the reports of `nodeflow plan` (effective expiry, spot fallbacks).
"""
