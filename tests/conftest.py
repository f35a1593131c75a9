"""Shared fixtures: each area's fixtures live in tests/support/ and are loaded as plugins here."""

import os

# The worker.py subprocesses of the e2e and chaos suites run as before election: every replica runs the in-worker
# controllers (a SIGKILLed leader's successor would wait out its 15 s lease). tests/runtime/test_leader*.py test it.
os.environ.setdefault("NODEFLOW_DISABLE_LEADER_ELECTION", "1")

pytest_plugins = [
    "support.temporal_fixtures",
    "support.moto_fixtures",
    "support.sim_fixtures",
    "support.xdist_groups",
]
