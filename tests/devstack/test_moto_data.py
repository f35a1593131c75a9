"""devstack/moto_data.py: moto's packaged EC2 answers read as files, without importing moto.ec2 (1.8 CPU-s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from devstack.moto_data import describe_instance_type_items, region_offerings

ROOT = Path(__file__).resolve().parents[2]


def test_the_files_are_aws_answers_as_moto_ships_them() -> None:
    items = describe_instance_type_items()
    assert len(items) > 1000 and items["m5.large"]["VCpuInfo"]["DefaultVCpus"] == 2
    offered = region_offerings("eu-west-1")
    assert offered and {o["Location"] for o in offered} >= {"eu-west-1a", "eu-west-1b"}
    assert {o["InstanceType"] for o in offered} <= set(items)


def test_reading_them_imports_no_part_of_moto() -> None:
    probe = ("import sys; from devstack.moto_data import describe_instance_type_items as d; d(); "
             "print(sorted(m for m in sys.modules if m == 'moto' or m.startswith('moto.')))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
