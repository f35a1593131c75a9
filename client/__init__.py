"""The Temporal client-side API: connect, start and signal workflows, the planner schedule, the interruption poller.

Used by the worker, the activities and the CLI; it imports workflows (types and ids) and never the CLI.
"""
