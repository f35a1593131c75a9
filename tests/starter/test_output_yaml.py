"""`-o yaml` is written with libyaml's emitter when PyYAML has it: the text must be what the pure-Python safe
emitter writes (scripts and tests compare it), only faster."""

from __future__ import annotations

import io

import yaml

from planning.disruption.method_names import MethodName
from starter.output import print_output

DATA = {"kind": "List", "items": [
    {"name": "m5.large", "price": 0.096, "zones": ["us-east-1a", "us-east-1b"], "spot": None, "arm": False,
     "labels": {"karpenter.sh/capacity-type": "on-demand", "note": "a: colon, # hash", "empty": "", "yes": "yes"},
     "message": "line one\nline two", "unicode": "ünïcode ✓", "long": "x" * 150, "nested": [[1, 2], {"a": []}]},
]}


def test_yaml_output_is_the_safe_emitters_text() -> None:
    out = io.StringIO()
    print_output(DATA, "yaml", out=out)
    assert out.getvalue() == yaml.safe_dump(DATA, sort_keys=False, default_flow_style=False)
    assert yaml.safe_load(out.getvalue()) == DATA



def test_yaml_output_writes_a_method_name_as_its_string() -> None:
    # plan rows carry MethodName members (planning/disruption/method_names.py); a bare safe dumper refuses them
    out = io.StringIO()
    print_output({"method": MethodName.DRIFT, "methods": [MethodName.REPAIR]}, "yaml", out=out)
    assert out.getvalue() == "method: Drift\nmethods:\n- Repair\n"
    assert type(yaml.safe_load(out.getvalue())["method"]) is str
