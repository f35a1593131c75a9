"""Fill the bundled catalog's optional discovery fields (api/data/catalog.yaml) from AWS's DescribeInstanceTypes data.

    .venv/bin/python scripts/enrich_catalog.py [--check]

The data is the copy moto ships (`moto/ec2/resources/instance_types.json.gz`, AWS's answers); each type gets the
fields discovery writes (api/instance_types/from_describe.py: cpu manufacturer, clock speed, hypervisor, ENI limits,
GPUs, storage, bandwidths, ...) so that `nodeflow plan -f` offline sees the same well-known labels and allocatable as
the worker with a discovered catalog. Names, prices, offerings and the capacity fields stay as written; a type whose
vCPUs, memory or ENI pods disagree with the data is reported and the run fails. `--check` only compares.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from api.catalog import DEFAULT_CATALOG_PATH, InstanceTypeCatalog
from api.instance_types.from_describe import from_describe
from devstack.moto_data import describe_instance_type_items

BASE_FIELDS = {"name", "cpu", "memory", "pods", "arch", "ephemeralStorage", "offerings"}


def extra_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The optional fields of the discovered type, as the catalog document writes them (aliases, no defaults)."""
    it = from_describe(item)
    assert it is not None
    dumped = it.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    return {k: v for k, v in dumped.items() if k not in BASE_FIELDS}


def mismatches(doc: dict[str, Any], items: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    for t in InstanceTypeCatalog.model_validate(doc).instance_types:
        it = from_describe(items[t.name])
        assert it is not None
        if (t.cpu_cores, t.memory_mib, t.pods, t.arch) != (it.cpu_cores, it.memory_mib, it.pods, it.arch):
            out.append(f"{t.name}: catalog {t.cpu}/{t.memory}/{t.pods}/{t.arch}, "
                       f"AWS {it.cpu}/{it.memory}/{it.pods}/{it.arch}")
    return out


def enrich(text: str, items: dict[str, dict[str, Any]]) -> str:
    """The same document, each type's block gaining its fields after `arch:` (comments and layout kept)."""
    out: list[str] = []
    name = None
    for line in text.splitlines():
        if line.startswith("- name: "):
            name = line.removeprefix("- name: ").strip()
        key = re.match(r"^  ([A-Za-z][A-Za-z0-9]*):", line)
        if name is not None and key is not None and key.group(1) not in BASE_FIELDS:
            continue  # a field an earlier run wrote: written again below
        out.append(line)
        if name is not None and line.startswith("  arch: "):
            for key, value in extra_fields(items[name]).items():
                flow = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
                out.append(f"  {key}: {flow.removesuffix('...').strip()}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare the catalog with the data")
    args = ap.parse_args()
    items = describe_instance_type_items()
    text = DEFAULT_CATALOG_PATH.read_text()
    bad = mismatches(yaml.safe_load(text), items)
    for line in bad:
        print(line, file=sys.stderr)
    if bad or args.check:
        return 1 if bad else 0
    new = enrich(text, items)
    InstanceTypeCatalog.model_validate(yaml.safe_load(new))
    DEFAULT_CATALOG_PATH.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
