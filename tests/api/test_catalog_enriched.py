"""The bundled catalog carries AWS's DescribeInstanceTypes fields (scripts/enrich_catalog.py), so offline plans see
the labels and allocatable discovery gives; and it is up to date with that data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from api.catalog import DEFAULT_CATALOG_PATH, load_default_catalog
from api.instance_types import labels as T
from api.instance_types.from_describe import eni_limited_pods

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "enrich_catalog.py"


def test_every_bundled_type_has_eni_limits_matching_its_pods_and_hardware_labels() -> None:
    for it in load_default_catalog().instance_types:
        assert it.max_enis and it.ipv4_per_eni, it.name
        assert eni_limited_pods(it.max_enis, it.ipv4_per_eni) == it.pods, it.name
        assert T.CPU_MANUFACTURER in it.labels and T.HYPERVISOR in it.labels, it.name


def test_the_bundled_catalog_is_what_the_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("enrich_catalog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = DEFAULT_CATALOG_PATH.read_text()
    items = module.describe_instance_type_items()  # the data the script reads
    assert module.mismatches(yaml.safe_load(text), items) == []
    assert module.enrich(text, items) == text
