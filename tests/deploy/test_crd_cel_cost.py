"""kube-apiserver's CEL cost check (simulator/cel_cost.py) over every CEL rule nodeflow ships in deploy/crds/, rule
costs worked out by hand as kube-apiserver's estimator computes them, and the cases it must refuse and must pass,
so a rule kube-apiserver would price past its budget fails here, not at `kubectl apply -k deploy/` (a
regex over an unbounded string, refused 3.8x over budget), and one it accepts is not refused."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.ec2nodeclass_validation import MAX_TAGS, validate_ec2nodeclass
from simulator.cel_cost import budget_message, crd_findings, rule_cost, rule_findings, schema_findings, undefined_fields

CRDS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "crds").glob("*.yaml"))
UNBOUNDED_STRING = {"type": "string"}
BOUNDED_STRING = {"type": "string", "maxLength": 63}


def _rules(crd: dict[str, Any]) -> int:
    return yaml.safe_dump(crd).count("rule:")


@pytest.mark.parametrize("path", CRDS, ids=lambda p: p.name)
def test_every_shipped_rule_is_bounded(path: Path) -> None:
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert _rules(crd) > 0
    assert [str(f) for f in crd_findings(crd)] == []


def test_the_released_disruption_policy_crd_is_refused_where_the_api_server_refused_it() -> None:
    crd = yaml.safe_load(next(p for p in CRDS if p.name.startswith("nodeflow.dev")).read_text(encoding="utf-8"))
    released = copy.deepcopy(crd)
    wave = released["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["drift"][
        "properties"]["waves"]["items"]
    del wave["maxLength"]
    [finding] = crd_findings(released)
    assert finding.field == ("spec.validation.openAPIV3Schema.properties[spec].properties[drift].properties[waves]"
                             ".items.x-kubernetes-validations[0].rule")
    assert finding.detail == budget_message("estimated rule cost", 37_748_840, 10**7)  # 20 waves x 1,887,442
    rule = wave["x-kubernetes-validations"][0]["rule"]  # `int` is priced as the node (3 MiB), the regex x5
    assert rule_cost(rule, wave) == (314_573 + 3) + (1 + 314_573 * 5) == 1_887_442
    assert "by factor of 3.8x (try simplifying the rule" in finding.detail  # the real v1.36 server's figure


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _map(value: dict[str, Any], **bounds: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": value, **bounds}


# (case, rule, schema, cost): cel-go's worst-case cost as kube-apiserver computes it, worked out by hand.
# 3,145,726 = 3 MiB - 2: an unbounded string's length; 393,215 = 3,145,726 // (2 + 6): the keys of a map of strings
# with no maxProperties; 1,048,575 = 3,145,726 // (2 + 1): the items of a list of strings with no maxItems.
COSTS = [
    ("regex over an unbounded string, once", "self.matches('^[a-z]+$')", UNBOUNDED_STRING,
     1 + 314_573 * 2),  # ident + ceil(3,145,727 x 0.1) x ceil(8 x 0.25)
    ("regex over a bounded string", "self.matches('^[a-z]+$')", BOUNDED_STRING, 1 + 26 * 2),  # 63 x 4 bytes + 1
    ("a map with no maxProperties, its keys compared", "self.all(k, k != '')", _map(UNBOUNDED_STRING),
     2 + 393_215 * (3 + 1)),  # a key's size is 0: comparing it costs its identifier only
    ("a map's values compared to a literal", "self.all(k, self[k] == 'x')", _map(BOUNDED_STRING),
     2 + 393_215 * (3 + 3 + 1)),  # self[k]: index + 2 identifiers; == : ceil(min(252, 1) x 0.1)
    ("`in` a literal list of 4", "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",
     _map({"x-kubernetes-int-or-string": True}), 2 + 449_389 * (3 + 1 + 4 + 1 + 10)),  # NodeOverlay's capacity
    ("startsWith is priced by its argument", "self.all(k, !k.startsWith('kubernetes.io/cluster'))",
     _map(UNBOUNDED_STRING), 2 + 393_215 * (3 + 1 + 1 + 3)),  # EC2NodeClass's spec.tags
    ("exists over a bounded list", "self.exists(x, x == 'a')", {"type": "array", "maxItems": 10,
                                                                 "items": BOUNDED_STRING}, 2 + 10 * (4 + 2)),
    ("has, size and a conditional", "has(self.a) ? self.a.size() < 5 : true", _obj(a=UNBOUNDED_STRING), 1 + 4),
]


@pytest.mark.parametrize(("case", "rule", "schema", "cost"), COSTS, ids=[c[0] for c in COSTS])
def test_rule_costs_are_kube_apiservers(case: str, rule: str, schema: dict[str, Any], cost: int) -> None:
    assert rule_cost(rule, schema) == cost, case


MUST_REFUSE = [
    ("iteration over an unbounded list of unbounded strings with a regex", "self.all(x, x.matches('^a$'))",
     {"type": "array", "items": UNBOUNDED_STRING}, "more than 100x"),
    ("split of an unbounded string in a loop", "self.all(x, x.split('@')[0] == 'a')",
     {"type": "array", "items": UNBOUNDED_STRING}, "more than 100x"),
    ("string concatenation of unbounded strings in a loop", "self.all(x, x + '-' == 'x-')",
     {"type": "array", "items": UNBOUNDED_STRING}, "more than 100x"),
    ("`in` an unbounded list, for each key of an unbounded map", "self.m.all(k, k in self.names)",
     _obj(m=_map(BOUNDED_STRING), names={"type": "array", "items": BOUNDED_STRING}), "more than 100x"),
]


@pytest.mark.parametrize(("case", "rule", "schema", "factor"), MUST_REFUSE, ids=[c[0] for c in MUST_REFUSE])
def test_must_refuse(case: str, rule: str, schema: dict[str, Any], factor: str) -> None:
    assert rule_findings(rule, schema) == [budget_message("estimated rule cost", rule_cost(rule, schema), 10**7)]
    assert f"by factor of {factor} " in rule_findings(rule, schema)[0], case


MUST_PASS = [
    ("regex over an enum", "self.matches('^a')", {"type": "string", "enum": ["a", "b"]}),
    ("iteration over a bounded map with bounded values", "self.all(k, self[k].matches('^a$'))",
     _map(BOUNDED_STRING, maxProperties=6)),
    ("size, has, comparisons and conversions", "has(self.a) && self.a.size() < 5 && self.a != 'x' && "
     "duration(self.d) > duration('0s')", _obj(a=UNBOUNDED_STRING, d={"type": "string"})),
    ("`in` a map is a lookup", "'nodes' in self.limits", _obj(limits=_map(UNBOUNDED_STRING))),
    ("a transition rule on an object", "self == oldSelf", _obj(a=UNBOUNDED_STRING)),
    ("a date-time string is bounded by its format", "self.matches('^2026')", {"type": "string", "format": "date-time"}),
    ("a lowerAscii of an unbounded string, once", "self.lowerAscii() == 'a'", UNBOUNDED_STRING),
    ("iteration over an unbounded map", "self.exists(k, k == 'a')", _map(BOUNDED_STRING)),
]


@pytest.mark.parametrize(("case", "rule", "schema"), MUST_PASS, ids=[c[0] for c in MUST_PASS])
def test_must_pass(case: str, rule: str, schema: dict[str, Any]) -> None:
    assert rule_findings(rule, schema) == [], case


def test_fields_a_rule_selects_must_be_declared() -> None:
    schema = _obj(a=BOUNDED_STRING, m={"type": "object", "additionalProperties": BOUNDED_STRING},
                  free={"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    assert undefined_fields("has(self.b) || self.a == 'x'", schema) == ["b"]
    assert undefined_fields("self.m.anything == 'x' && self.free.whatever == 1 && self.a.size() > 0", schema) == []


def test_a_rule_runs_once_per_element_of_the_lists_and_maps_above_it() -> None:
    """The cost is multiplied by the maxItems/maxProperties above the rule or, when one is missing, by how many of
    the rule's node fit in a 3 MiB request (3,145,728 // (its smallest JSON + 1))."""
    item = {"type": "object", "properties": {"v": BOUNDED_STRING},
            "x-kubernetes-validations": [{"rule": "self.v.matches('^a$')"}, {"rule": "has(self.v)"}]}
    once = rule_cost("self.v.matches('^a$')", item)
    assert once == 2 + 26 * 1
    schema = _obj(list={"type": "array", "items": item})
    [finding] = schema_findings(schema)  # 1,572,864 objects ({} is 2 bytes) x 28
    assert finding.field == "openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule"
    assert finding.detail == budget_message("estimated rule cost", 3_145_728 // 3 * once, 10**7)
    assert "by factor of 2.9x" in finding.detail
    schema["properties"]["list"]["maxItems"] = 100_000  # 2,800,000
    assert schema_findings(schema) == []


def test_the_whole_schema_has_a_budget_of_10_to_the_8() -> None:
    rule = {"rule": "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"}  # 8,538,393 each
    capacity = _map({"x-kubernetes-int-or-string": True}, **{"x-kubernetes-validations": [rule] * 12})
    found = [str(f) for f in schema_findings(_obj(capacity=capacity))]
    each = "openAPIV3Schema.properties[capacity].x-kubernetes-validations[{}].rule: Forbidden: contributed to " \
           "estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    assert found == [each.format(i) for i in range(4)] + [
        "openAPIV3Schema: Forbidden: " + budget_message("x-kubernetes-validations estimated rule cost total for "
                                                        "entire OpenAPIv3 schema", 12 * 8_538_393, 10**8)]
    assert "by factor of 1.024607x" in found[-1]
    capacity["x-kubernetes-validations"] = [rule] * 11  # 93,922,323
    assert schema_findings(_obj(capacity=capacity)) == []


def test_nodeflow_validate_holds_the_bound_the_crd_added_to_spec_tags() -> None:
    spec = {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}
    doc = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "c"}, "spec": spec}
    doc["spec"]["tags"] = {f"k{i}": "v" for i in range(MAX_TAGS)}
    assert not [p for p in validate_ec2nodeclass(doc) if "spec.tags" in p]
    doc["spec"]["tags"][f"k{MAX_TAGS}"] = "v"
    assert any(f"at most {MAX_TAGS}" in p for p in validate_ec2nodeclass(doc))
