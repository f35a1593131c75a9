"""simulator/cel_cost.py against kube-apiserver's own cost figures: the 58 cases of TestCostEstimation in
github.com/kubernetes/apiextensions-apiserver `pkg/apiserver/schema/cel/compilation_test.go` that check a figure
(its 10 `has()` cases check none): the worst-case cost of one rule on a schema with no bounds, then with the bound
the case sets; and the CRD-level cost cases of `pkg/apis/apiextensions/validation/validation_test.go` (which rules
and totals it refuses), as of v0.37.0-beta.0. The schemas are rebuilt here from the cases; the figures are
upstream's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from simulator.cel_cost import crd_findings, rule_cost

Schema = dict[str, Any]
Gen = Callable[[int | None], Schema]


def _prim(kind: str) -> Schema:
    if kind in ("duration", "date", "date-time"):
        return {"type": "string", "format": kind}
    if kind == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    return {"type": kind}


def _bound(schema: Schema, key: str, value: int | None) -> Schema:
    return {**schema, key: value} if value is not None else schema


def string(m: int | None) -> Schema:
    return _bound({"type": "string"}, "maxLength", m)


def byte_string(m: int | None) -> Schema:
    return _bound({"type": "string", "format": "byte"}, "maxLength", m)


def array(kind: str) -> Gen:
    return lambda m: _bound({"type": "array", "items": _prim(kind)}, "maxItems", m)


def array_of_arrays(kind: str) -> Gen:
    return lambda m: _bound({"type": "array", "items": {"type": "array", "items": _prim(kind)}}, "maxItems", m)


OBJ = {"type": "object", "properties": {"required": {"type": "string"}, "optional": {"type": "string"}},
       "required": ["required"]}


def object_array(m: int | None) -> Schema:
    return _bound({"type": "array", "items": OBJ}, "maxItems", m)


def map_array(kind: str) -> Gen:
    return lambda m: _bound({"type": "array", "items": {"type": "object", "additionalProperties": _prim(kind)}},
                            "maxItems", m)


def map_of(item: Schema) -> Gen:
    return lambda m: _bound({"type": "object", "additionalProperties": item}, "maxProperties", m)


def map_(kind: str) -> Gen:
    return map_of(_prim(kind))


def nested_spec(m: int | None) -> Schema:
    return _bound({"type": "object", "additionalProperties": string(m)}, "maxProperties", m)


def all_max_nested(m: int | None) -> Schema:
    return _bound({"type": "array", "items": _bound({"type": "object", "additionalProperties": _bound(
        OBJ, "maxProperties", m)}, "maxProperties", m)}, "maxItems", m)


def one_max_nested(m: int | None) -> Schema:
    return _bound({"type": "array", "items": {"type": "object", "additionalProperties": OBJ}}, "maxProperties", m)


def enum(*values: str) -> Gen:
    return lambda m: _bound({"type": "string", "enum": list(values)}, "maxLength", m)


def string_list(m: int | None) -> Schema:
    return _bound({"type": "array", "items": string(m)}, "maxItems", m)


def replace_inputs(m: int | None) -> Schema:
    return {"type": "object", "properties": {"str": string(m), "before": string(2), "after": string(4)}}


def split_inputs(m: int | None) -> Schema:
    return {"type": "object", "properties": {"str": string(m), "separator": string(m)}}


def int_or_string(m: int | None) -> Schema:
    return _bound({"x-kubernetes-int-or-string": True}, "maxLength", m)


NUMBERS = {"type": "array", "items": {"type": "number"}}
NUMBER_MAP = {"type": "object", "additionalProperties": {"type": "number"}}

# (name, schema generator, rule, cost with no bounds (None: only "over the limit"), the bound set, cost with it)
CASES: list[tuple[str, Gen, str, int | None, int, int]] = [
    ("number array all", array("number"), "self.all(x, true)", 4718591, 10, 32),
    ("string array all", array("string"), "self.all(x, true)", 3145727, 20, 62),
    ("boolean array all", array("boolean"), "self.all(x, true)", 1887437, 5, 17),
    ("array of arrays all", array_of_arrays("number"), "self.all(x, true)", 3145727, 100, 302),
    ("array of objects all", object_array, "self.all(x, true)", 555128, 50, 152),
    ("map of numbers all", map_("number"), "self.all(x, true)", 1348169, 10, 32),
    ("map of strings all", map_("string"), "self.all(x, true)", 1179647, 3, 11),
    ("map of booleans all", map_("boolean"), "self.all(x, true)", 943718, 100, 302),
    ("string contains", string, "self.contains('test')", 314574, 10, 5),
    ("string startsWith", string, "self.startsWith('test')", 2, 15, 2),
    ("string endsWith", string, "self.endsWith('test')", 2, 30, 2),
    ("concat string", string, 'size(self + "hello") > size("hello")', 314578, 4, 7),
    ("index number array", array("number"), "self[1] == 0.0", 2, 5000, 2),
    ("index string array", array("string"), "self[1] == self[1]", 314577, 8, 314577),
    ("O(n^2)", array("number"), "self.all(x, self.all(y, true))", None, 10, 352),
    ("O(n^3)", array("number"), "self.all(x, self.all(y, self.all(z, true)))", None, 10, 3552),
    ("regex simple", string, 'self.matches("x")', 314574, 50, 22),
    ("regex empty string", string, '"".matches("(((((((((())))))))))[0-9]")', 7, 10, 7),
    ("regex empty regex", string, 'self.matches("")', 1, 100, 1),
    ("map strings value length", nested_spec, "self.all(x, x.contains(self[x]))", 2752507, 10, 72),
    ("array maxItems 0", array("number"), "self[3] == 0.0", 2, 0, 2),
    ("map maxProperties 0", map_("number"), 'self["x"] == 0.0', 2, 0, 2),
    ("string maxLength 0", string, 'self == "x"', 2, 0, 1),
    ("bytes maxLength 0", byte_string, 'self == b"x"', 2, 0, 1),
    ("maxItems above estimate", array("number"), "self.all(x, x == 0.0)", 6291454, 3 * 1024 * 2048, 25165826),
    ("nested root rule all max", all_max_nested, 'self.all(x, x["y"].required == "z")', 7340027, 10, 72),
    ("nested root rule one max", one_max_nested, 'self.all(x, x["y"].required == "z")', 7340027, 10, 7340027),
    ("int-or-string array all", array("int-or-string"), "self.all(x, true)", 4718591, 10, 32),
    ("index int-or-string array", array("int-or-string"), "self[0] == 5", 3, 10, 3),
    ("index boolean array", array("boolean"), "self[0] == false", 2, 25, 2),
    ("index object array", object_array, "self[0] == null", 2, 422, 2),
    ("index array of arrays", array_of_arrays("number"), "self[0][0] == -1.0", 3, 51, 3),
    ("array of number maps all", map_array("number"), "self.all(x, x.y == 25.2)", 6291452, 12, 74),
    ("index array of number maps", map_array("number"), "self[0].x > 2.0", 4, 3000, 4),
    ("duration array all", array("duration"), "self.all(x, true)", 2359295, 5, 17),
    ("index duration array", array("duration"), "self[0].getHours() == 2", 4, 525, 4),
    ("date array all", array("date"), "self.all(x, true)", 725936, 15, 47),
    ("index date array", array("date"), "self[2].getDayOfMonth() == 13", 4, 42, 4),
    ("date-time array all", array("date-time"), "self.all(x, true)", 428963, 25, 77),
    ("index date-time array", array("date-time"), "self[2].getMinutes() == 45", 4, 99, 4),
    ("map int-or-string all", map_("int-or-string"), "self.all(x, true)", 1348169, 15, 47),
    ("map of objects all", map_of(OBJ), "self.all(x, true)", 428963, 20, 62),
    ("map of number maps all", map_of(NUMBER_MAP), "self.all(x, true)", 1179647, 10, 32),
    ("map of number arrays all", map_of(NUMBERS), "self.all(x, true)", 1179647, 25, 77),
    ("map of durations all", map_("duration"), "self.all(x, true)", 1048577, 5, 17),
    ("map of dates all", map_("date"), "self.all(x, true)", 524288, 10, 32),
    ("map of date-times all", map_("date-time"), "self.all(x, true)", 349526, 25, 77),
    ("find", string, "self.find('[0-9]+') == ''", 629147, 10, 11),
    ("join", string_list, "self.join(' ') == 'aa bb'", 329853068905, 10, 43),
    ("isSorted", string_list, "self.isSorted() == true", 329854432052, 10, 52),
    ("replace", replace_inputs, "self.str.replace(self.before, self.after) == 'does not matter'", 629154, 4, 12),
    ("split", split_inputs, "self.str.split(self.separator) == []", 629160, 10, 22),
    ("lowerAscii", string, "self.lowerAscii() == 'lower!'", 314575, 10, 6),
    ("size call", map_("integer"), "oldSelf.size() == self.size()", 5, 10, 5),
    ("timestamp ==", map_("date-time"), 'self["a"] == self["b"]', 8, 7, 8),
    ("duration ==", map_("duration"), 'self["c"] == self["d"]', 8, 42, 8),
    ("enum contains", enum("A", "B", "C", "LongValue"), "self.contains('A')", 2, 1000, 401),
    ("int-or-string isQuantity", int_or_string, "isQuantity(self)", 314574, 20, 9),
]


@pytest.mark.parametrize(("name", "gen", "rule", "unbounded", "bound", "bounded"), CASES, ids=[c[0] for c in CASES])
def test_rule_cost_is_kube_apiservers(name: str, gen: Gen, rule: str, unbounded: int | None, bound: int,
                                      bounded: int) -> None:
    if unbounded is None:
        assert rule_cost(rule, gen(None)) > 10**7, name
    else:
        assert rule_cost(rule, gen(None)) == unbounded, name
    assert rule_cost(rule, gen(bound)) == bounded, name


def _crd(schema: Schema) -> dict[str, Any]:
    return {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}}


def _nested(value: Schema, key: Schema, item_bounds: Schema | None = None) -> Schema:
    inner = {"type": "object", "required": ["key"], "properties": {"key": key}}
    return {"type": "object", "properties": {"value": {**value, "items": {
        "type": "object", **(item_bounds or {}), "additionalProperties": inner},
        "x-kubernetes-validations": [{"rule": "self.all(x, x.all(y, x[y].key == x[y].key))"}]}}}


ROOT, RULE = "spec.validation.openAPIV3Schema", ".x-kubernetes-validations[0].rule"
VALUE_RULE = f"{ROOT}.properties[value]{RULE}"
CRD_CASES = [
    ("forbid double-nested rule with no limit set", _nested({"type": "array"}, {"type": "string"}),
     [VALUE_RULE, VALUE_RULE, ROOT]),
    ("forbid double-nested rule with one limit set", _nested({"type": "array"}, {"type": "string", "maxLength": 10}),
     [VALUE_RULE, VALUE_RULE, ROOT]),
    ("allow double-nested rule with three limits set",
     _nested({"type": "array", "maxItems": 10}, {"type": "string", "maxLength": 10}, {"maxProperties": 10}), []),
    ("allow double-nested rule with one limit set on outermost array",
     _nested({"type": "array", "maxItems": 4}, {"type": "number"}), []),
    ("check for cardinality of 1 under root object", {"type": "object", "properties": {"value": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self < 1024"}]}}}, []),
    ("forbid validation rules where cost total exceeds total limit", {"type": "object", "properties": {
        "list": {"type": "array", "maxItems": 100000, "items": {
            "type": "string", "maxLength": 5000, "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]}},
        "map": {"type": "object", "maxProperties": 1000, "additionalProperties": {
            "type": "string", "maxLength": 5000, "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]}},
        "field": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]}}},
     [f"{ROOT}.properties[list].items{RULE}", f"{ROOT}.properties[list].items{RULE}",
      f"{ROOT}.properties[map].additionalProperties{RULE}", ROOT]),
]


@pytest.mark.parametrize(("name", "schema", "fields"), CRD_CASES, ids=[c[0] for c in CRD_CASES])
def test_crd_cost_refusals_are_kube_apiservers(name: str, schema: Schema, fields: list[str]) -> None:
    assert [f.field for f in crd_findings(_crd(schema))] == fields, name
