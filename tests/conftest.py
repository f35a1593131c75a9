"""Shared fixtures: each area's fixtures live in tests/support/ and are loaded as plugins here."""

pytest_plugins = [
    "support.temporal_fixtures",
    "support.moto_fixtures",
    "support.sim_fixtures",
    "support.xdist_groups",
]
