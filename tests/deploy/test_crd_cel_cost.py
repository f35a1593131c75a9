"""The bounded-cost check (simulator/cel_cost.py) over every CEL rule nodeflow ships in deploy/crds/, and the
cases it must refuse and must pass, so a rule kube-apiserver would price past its budget fails here, not at
`kubectl apply -k deploy/` (issue #23: a regex over an unbounded string, refused 3.8x over budget)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.ec2nodeclass_validation import MAX_TAGS, validate_ec2nodeclass
from simulator.cel_cost import crd_findings, rule_findings, schema_findings, undefined_fields

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
    assert finding.reasons == ("matches() reads self (a string with no maxLength)",)


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


MUST_REFUSE = [
    ("regex over an unbounded string", "self.matches('^[a-z]+$')", UNBOUNDED_STRING, "matches() reads self"),
    ("split of an unbounded string", "self.name.split('@')[0] == 'a'", _obj(name=UNBOUNDED_STRING), "split()"),
    ("a regex on what split() returns from an unbounded string", "self.split('/')[0].matches('^a$')",
     UNBOUNDED_STRING, "matches() reads self.split(...)[*]"),
    ("lowerAscii of an unbounded string", "self.lowerAscii() == 'a'", UNBOUNDED_STRING, "lowerAscii()"),
    ("find on an unbounded field", "self.s.find('^[^/]+') == 'x'", _obj(s=UNBOUNDED_STRING), "find() reads self.s"),
    ("iteration over an unbounded list", "self.all(x, x > 0)", {"type": "array", "items": {"type": "integer"}},
     "all() reads self (a list with no maxItems)"),
    ("iteration over an unbounded map", "self.exists(k, k == 'a')",
     {"type": "object", "additionalProperties": BOUNDED_STRING}, "exists() reads self (a map with no maxProperties)"),
    ("filter over an unbounded nested list", "self.items.filter(x, x == 'a').size() < 2",
     _obj(items={"type": "array", "items": BOUNDED_STRING}), "filter() reads self.items"),
    ("a regex inside a loop over bounded items of unbounded strings", "self.all(x, x.matches('^a$'))",
     {"type": "array", "maxItems": 5, "items": UNBOUNDED_STRING}, "matches() reads self[*]"),
    ("`in` scanning an unbounded list", "'a' in self.names",
     _obj(names={"type": "array", "items": BOUNDED_STRING}), "`in` reads self.names"),
    ("string concatenation of an unbounded string", "self.a + '-' == 'x-'", _obj(a=UNBOUNDED_STRING),
     "`+` reads self.a"),
    ("string concatenation in a loop", "self.l.map(x, x + '!').size() > 0",
     _obj(l={"type": "array", "maxItems": 3, "items": UNBOUNDED_STRING}), "`+` reads self.l[*]"),
    ("the global form of a string function", "matches(self, '^a$')", UNBOUNDED_STRING, "matches() reads self"),
    ("a regex on what a conditional picks", "(has(self.a) ? self.a : 'x').matches('^a$')",
     _obj(a=UNBOUNDED_STRING), "matches() reads self.a"),
    ("an int-or-string with no maxLength", "type(self) == int || self.matches('^[0-9]+%$')",
     {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}, "matches() reads self"),
]

MUST_PASS = [
    ("regex over a bounded string", "self.matches('^[a-z]+$')", BOUNDED_STRING),
    ("regex over an enum", "self.matches('^a')", {"type": "string", "enum": ["a", "b"]}),
    ("iteration over a bounded list", "self.all(x, x.matches('^a$'))",
     {"type": "array", "maxItems": 10, "items": BOUNDED_STRING}),
    ("iteration over a bounded map with bounded values", "self.all(k, self[k].matches('^a$'))",
     {"type": "object", "maxProperties": 6, "additionalProperties": BOUNDED_STRING}),
    ("startsWith is priced by its (literal) argument", "!self.startsWith('-')", UNBOUNDED_STRING),
    ("size, has, comparisons and conversions are constant", "has(self.a) && self.a.size() < 5 && self.a != 'x' && "
     "duration(self.d) > duration('0s')", _obj(a=UNBOUNDED_STRING, d={"type": "string"})),
    ("`in` a map is a lookup", "'nodes' in self.limits",
     _obj(limits={"type": "object", "additionalProperties": UNBOUNDED_STRING})),
    ("`in` a literal list", "self.family in ['al2', 'al2023']", _obj(family=UNBOUNDED_STRING)),
    ("a transition rule on an object", "self == oldSelf", _obj(a=UNBOUNDED_STRING)),
    ("a date-time string is bounded by its format", "self.matches('^2026')", {"type": "string", "format": "date-time"}),
]


@pytest.mark.parametrize(("case", "rule", "schema", "why"), MUST_REFUSE, ids=[c[0] for c in MUST_REFUSE])
def test_must_refuse(case: str, rule: str, schema: dict[str, Any], why: str) -> None:
    found = rule_findings(rule, schema)
    assert any(why in f for f in found), f"{case}: {found}"


@pytest.mark.parametrize(("case", "rule", "schema"), MUST_PASS, ids=[c[0] for c in MUST_PASS])
def test_must_pass(case: str, rule: str, schema: dict[str, Any]) -> None:
    assert rule_findings(rule, schema) == [], case


def test_fields_a_rule_selects_must_be_declared() -> None:
    schema = _obj(a=BOUNDED_STRING, m={"type": "object", "additionalProperties": BOUNDED_STRING},
                  free={"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    assert undefined_fields("has(self.b) || self.a == 'x'", schema) == ["b"]
    assert undefined_fields("self.m.anything == 'x' && self.free.whatever == 1 && self.a.size() > 0", schema) == []


def test_a_costly_rule_under_an_unbounded_list_runs_unboundedly_often() -> None:
    item = {"type": "object", "properties": {"v": BOUNDED_STRING},
            "x-kubernetes-validations": [{"rule": "self.v.matches('^a$')"}, {"rule": "has(self.v)"}]}
    schema = _obj(list={"type": "array", "items": item})
    [finding] = schema_findings(schema)
    assert finding.field == "openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule"
    assert "runs once per element of openAPIV3Schema.properties[list]" in finding.reasons[0]
    schema["properties"]["list"]["maxItems"] = 100
    assert schema_findings(schema) == []


def test_nodeflow_validate_holds_the_bound_the_crd_added_to_spec_tags() -> None:
    spec = {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"a": "b"}}], "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}
    doc = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "c"}, "spec": spec}
    doc["spec"]["tags"] = {f"k{i}": "v" for i in range(MAX_TAGS)}
    assert not [p for p in validate_ec2nodeclass(doc) if "spec.tags" in p]
    doc["spec"]["tags"][f"k{MAX_TAGS}"] = "v"
    assert any(f"at most {MAX_TAGS}" in p for p in validate_ec2nodeclass(doc))
