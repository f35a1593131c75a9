"""api/yaml_load.py: libyaml's speed, PyYAML's safe meaning; Kubernetes' timestamps stay strings."""

from __future__ import annotations

import pytest
import yaml

from api.yaml_load import kube_load_all, safe_load

DOC = "a: 1\nb: [x, 2.5, true, null]\nwhen: 2026-11-30T04:00:00Z\n"


def test_safe_load_reads_what_pyyamls_safe_load_reads() -> None:
    assert safe_load(DOC) == yaml.safe_load(DOC)


def test_the_kube_loader_keeps_timestamps_as_the_api_sends_them() -> None:
    (doc,) = kube_load_all(DOC)
    assert doc["when"] == "2026-11-30T04:00:00Z" and doc["b"] == ["x", 2.5, True, None]


def test_a_python_tag_is_refused() -> None:
    with pytest.raises(yaml.YAMLError):
        safe_load("!!python/object/apply:os.system ['true']")
