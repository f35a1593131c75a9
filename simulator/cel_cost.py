"""A bounded-cost check of CRD validation rules: the cases kube-apiserver's CEL cost estimator prices past its
budget (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation: `estimated rule cost exceeds budget`),
found by walking each rule's syntax tree (cel-python's parser) against the schema node the rule sits on.

The real estimator computes a number: each operation's cost from the largest size its operands can have (a
string with no `maxLength` is as long as a request may be, 3 MiB; a list with no `maxItems` holds as many
elements as fit in 3 MiB), times how often the rule runs (the product of the `maxItems`/`maxProperties` of the
lists and maps above it), against 10^7 per rule and 10^8 per CRD. This module does not compute that number. It
refuses what makes the number explode, which is what the real server refused (a regex over a string with no
`maxLength`, issue #23):

Modelled (each refused when what it reads has no `maxLength`/`maxItems`/`maxProperties`, nor an `enum` or a
known `format` that bounds a string):
  - regex and string functions on their receiver: `matches`, `find`, `findAll`, `split`, `replace`, `lowerAscii`,
    `upperAscii`, `trim`, `indexOf`, `lastIndexOf`, `substring`, `charAt`, `contains`, `format`; `startsWith` and
    `endsWith` on their argument (cel-go prices those by the prefix);
  - list functions `join`, `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on their receiver;
  - the comprehension macros `all`, `exists`, `exists_one`, `map`, `filter` over a list or map;
  - `x in list` (a scan of the list; `in` a map is a lookup);
  - `+` of strings or lists (copies both);
  - any of the above in a rule that runs once per element of an unbounded list or map above it.
  The result of `split`, `find`, `lowerAscii`, ... is unbounded when its input is, so
  `self.split('@')[0].matches(...)` is refused on an unbounded `self`.
Not modelled (see docs/decisions.md, "Where the emulator differs from kube-apiserver"): the numeric totals (a rule
with only bounded inputs may still exceed 10^7 with enough nested loops, and many cheap rules may exceed the
CRD's 10^8 together); equality and ordering of strings, lists and maps (`self == oldSelf` is priced by size in
cel-go; not here); conversions (`duration()`, `timestamp()`, `int()`) as constant; the keys of a map are taken as
bounded when the map's `maxProperties` is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import celpy
from lark import Token, Tree

Schema = dict[str, Any]
_ENV = celpy.Environment()
_PASS = {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member",
         "primary", "paren_expr"}
STRING_FUNCTIONS = {"matches", "find", "findAll", "split", "replace", "lowerAscii", "upperAscii", "trim", "indexOf",
                    "lastIndexOf", "substring", "charAt", "contains", "format"}
ARG_PRICED = {"startsWith", "endsWith"}
LIST_FUNCTIONS = {"join", "isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"}
MACROS = {"all", "exists", "exists_one", "map", "filter"}
STRING_RESULTS = {"find", "replace", "lowerAscii", "upperAscii", "trim", "substring", "charAt", "join", "format"}
BOUNDED_FORMATS = {"date", "date-time", "duration", "uuid", "int32", "int64"}


@dataclass(frozen=True)
class Shape:
    """What an expression is, as far as the cost goes: a string, list or map (or something cheap), whether its size
    is bounded, the schema it comes from and a name for it in messages."""

    kind: str  # string | list | map | object | other
    bounded: bool
    origin: str
    schema: Schema | None = None


OTHER = Shape("other", True, "")


def shape_of(schema: Schema | None, origin: str) -> Shape:
    """The shape of a value under `schema`."""
    if not schema:
        return Shape("other", True, origin)
    kind = schema.get("type")
    if kind == "string" or schema.get("x-kubernetes-int-or-string"):
        bounded = "maxLength" in schema or "enum" in schema or schema.get("format") in BOUNDED_FORMATS
        return Shape("string", bounded, origin, schema)
    if kind == "array":
        return Shape("list", "maxItems" in schema, origin, schema)
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict) and not schema.get("properties"):
        return Shape("map", "maxProperties" in schema, origin, schema)
    if kind == "object":
        return Shape("object", True, origin, schema)
    return Shape("other", True, origin, schema)


def _why(s: Shape) -> str:
    bound = {"string": "maxLength", "list": "maxItems", "map": "maxProperties"}.get(s.kind, "bound")
    return f"{s.origin} (a {s.kind} with no {bound})"


class _Walker:
    """Walks one rule; `findings` collects why it is too costly."""

    def __init__(self, self_shape: Shape) -> None:
        self.findings: list[str] = []
        self.undefined: list[str] = []  # fields a rule selects that its schema does not declare
        self.env: dict[str, Shape] = {"self": self_shape, "oldSelf": replace(self_shape, origin="oldSelf")}

    def refuse(self, what: str, s: Shape) -> None:
        self.findings.append(f"{what} reads {_why(s)}")

    def walk(self, t: Any) -> Shape:
        while isinstance(t, Tree) and t.data in _PASS and len(t.children) == 1 and isinstance(t.children[0], Tree):
            t = t.children[0]
        if not isinstance(t, Tree):
            return OTHER
        handler = getattr(self, f"_{t.data}", None)
        if handler is not None:
            return handler(t)
        for child in t.children:
            self.walk(child)
        return OTHER

    def _expr(self, t: Tree) -> Shape:
        """`c ? a : b`: the larger of the two branches (an unbounded one makes the result unbounded)."""
        shapes = [self.walk(child) for child in t.children]
        if len(shapes) != 3:
            return OTHER
        a, b = shapes[1], shapes[2]
        return a if not a.bounded or b.kind == "other" else b

    def _ident(self, t: Tree) -> Shape:
        return self.env.get(str(t.children[0]), OTHER)

    def _literal(self, t: Tree) -> Shape:
        text = str(t.children[0])
        return Shape("string", True, text) if text[:1] in "'\"rRbB" else OTHER

    def _list_lit(self, t: Tree) -> Shape:
        for child in t.children:
            self.walk(child)
        return Shape("list", True, "a list literal")

    def _member_dot(self, t: Tree) -> Shape:
        base, name = self.walk(t.children[0]), str(t.children[1])
        s = base.schema or {}
        if base.kind == "object" and s.get("properties") and name not in s["properties"] \
                and not s.get("additionalProperties") and not s.get("x-kubernetes-preserve-unknown-fields"):
            self.undefined.append(name)
        return _child(base, name, f"{base.origin}.{name}")

    def _member_index(self, t: Tree) -> Shape:
        base = self.walk(t.children[0])
        self.walk(t.children[1])
        return _child(base, None, f"{base.origin}[*]")

    def _relation(self, t: Tree) -> Shape:
        """`a OP b` parses as relation(relation_OP(a), b)."""
        op, left = t.children[0], t.children[0].children[0]
        self.walk(left)
        container = self.walk(t.children[1])
        if op.data == "relation_in" and container.kind == "list" and not container.bounded:
            self.refuse("`in`", container)
        return OTHER

    def _addition(self, t: Tree) -> Shape:
        """`a + b` parses as addition(addition_add(a), b); `a - b` likewise with addition_sub."""
        op = t.children[0]
        left, right = self.walk(op.children[0]), self.walk(t.children[1])
        if op.data != "addition_add":
            return OTHER
        for s in (left, right):
            if s.kind in ("string", "list") and not s.bounded:
                self.refuse("`+`", s)
        kind = left.kind if left.kind in ("string", "list") else right.kind
        return Shape(kind, left.bounded and right.bounded, f"({left.origin} + {right.origin})")

    def _ident_arg(self, t: Tree) -> Shape:
        name = str(t.children[0])
        args = _args(t.children[1] if len(t.children) > 1 else None)
        if name == "has":
            for a in args:
                self.walk(a)  # for undefined fields only: a presence test costs nothing
            return OTHER
        shapes = [self.walk(a) for a in args]
        if name in STRING_FUNCTIONS | LIST_FUNCTIONS and shapes:  # the global form f(target, ...)
            return self._method(name, shapes[0], shapes[1:])
        return OTHER

    def _member_dot_arg(self, t: Tree) -> Shape:
        target = self.walk(t.children[0])
        name = str(t.children[1])
        args = _args(t.children[2] if len(t.children) > 2 else None)
        if name in MACROS and args:
            return self._macro(name, target, args)
        return self._method(name, target, [self.walk(a) for a in args])

    def _macro(self, name: str, target: Shape, args: list[Any]) -> Shape:
        if target.kind in ("list", "map") and not target.bounded:
            self.refuse(f"{name}()", target)
        var = str(_leaf(args[0]))
        saved = self.env.get(var)
        self.env[var] = _element(target)
        for body in args[1:]:
            self.walk(body)
        if saved is None:
            del self.env[var]
        else:
            self.env[var] = saved
        return Shape("list", target.bounded, f"{target.origin}.{name}(...)") if name in ("map", "filter") else OTHER

    def _method(self, name: str, target: Shape, args: list[Shape]) -> Shape:
        if name in ARG_PRICED:
            for a in args:
                if a.kind == "string" and not a.bounded:
                    self.refuse(f"{name}()", a)
            return OTHER
        priced = STRING_FUNCTIONS if target.kind == "string" else LIST_FUNCTIONS if target.kind == "list" else set()
        if name in priced and not target.bounded:
            self.refuse(f"{name}()", target)
        if name in ("split", "findAll"):  # pieces of a bounded string are bounded, in number and in length
            limit = int((target.schema or {}).get("maxLength") or 0) if target.bounded else None
            bounds = {} if limit is None else {"maxLength": limit}
            return Shape("list", target.bounded, f"{target.origin}.{name}(...)",
                         {"type": "array", "items": {"type": "string", **bounds},
                          **({} if limit is None else {"maxItems": limit + 1})})
        if name in STRING_RESULTS:
            return Shape("string", target.bounded, f"{target.origin}.{name}(...)")
        return OTHER


def _args(exprlist: Any) -> list[Any]:
    return list(exprlist.children) if isinstance(exprlist, Tree) else []


def _leaf(t: Any) -> Any:
    while isinstance(t, Tree):
        t = t.children[0]
    return t


def _child(base: Shape, name: str | None, origin: str) -> Shape:
    """The shape of `base.name` (a field or map value) or `base[i]` (a list element or map value)."""
    s = base.schema or {}
    if base.kind == "list":
        return shape_of(s.get("items"), origin)
    if name is not None and name in (s.get("properties") or {}):
        return shape_of(s["properties"][name], origin)
    extra = s.get("additionalProperties")
    return shape_of(extra if isinstance(extra, dict) else None, origin)


def _element(target: Shape) -> Shape:
    """What a comprehension's variable holds: a list's element, or a map's key."""
    if target.kind == "list":
        return _child(target, None, f"{target.origin}[*]")
    if target.kind == "map":
        return Shape("string", target.bounded, f"the keys of {target.origin}")
    return OTHER


def undefined_fields(rule: str, schema: Schema) -> list[str]:
    """The fields `rule` selects on an object whose schema does not declare them: the real server's type check
    refuses such a CRD (`compilation failed: ... undefined field 'x'`); cel-python has no type check."""
    walker = _Walker(shape_of(schema, "self"))
    walker.walk(_ENV.compile(rule))
    return walker.undefined


def rule_findings(rule: str, schema: Schema) -> list[str]:
    """Why `rule`, sitting on `schema`, is too costly (empty when it is bounded)."""
    walker = _Walker(shape_of(schema, "self"))
    walker.walk(_ENV.compile(rule))
    return walker.findings


@dataclass(frozen=True)
class Finding:
    """A rule the real API server would refuse, at its CRD field path."""

    field: str
    rule: str
    reasons: tuple[str, ...]

    @property
    def detail(self) -> str:
        return (f"estimated rule cost exceeds budget (nodeflow's bounded-cost check, simulator/cel_cost.py): "
                f"{'; '.join(self.reasons)}")

    def __str__(self) -> str:
        return f"{self.field}: Forbidden: {self.detail}"


def _nodes(schema: Schema, path: str, loops: tuple[str, ...]) -> Iterator[tuple[Schema, str, tuple[str, ...]]]:
    """Every schema node with its CRD field path and the unbounded lists/maps it sits under."""
    yield schema, path, loops
    for key, sub in (schema.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.properties[{key}]", loops)
    here = shape_of(schema, path)
    inner = loops + ((path,) if here.kind in ("list", "map") and not here.bounded else ())
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}.items", inner)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.additionalProperties", inner)


def schema_findings(schema: Schema, path: str = "openAPIV3Schema") -> list[Finding]:
    """Every rule under `schema` that the bounded-cost check refuses."""
    out: list[Finding] = []
    for node, where, loops in _nodes(schema, path, ()):
        for i, entry in enumerate(node.get("x-kubernetes-validations") or []):
            rule = str(entry.get("rule", ""))
            reasons = rule_findings(rule, node)
            if loops and _has_costly_call(rule):
                reasons = [*reasons, f"runs once per element of {loops[-1]} (a list or map with no maxItems/"
                                     "maxProperties)"]
            if reasons:
                out.append(Finding(f"{where}.x-kubernetes-validations[{i}].rule", rule, tuple(reasons)))
    return out


def _has_costly_call(rule: str) -> bool:
    """Whether the rule calls a priced function or macro at all (then running it unboundedly often is priced too)."""
    names = {str(tok) for tok in _ENV.compile(rule).scan_values(lambda v: isinstance(v, Token))}
    return bool(names & (STRING_FUNCTIONS | LIST_FUNCTIONS | MACROS | ARG_PRICED))


def crd_findings(crd: dict[str, Any]) -> list[Finding]:
    """The findings of every version's schema of a CRD document, at the path kube-apiserver names (one version:
    `spec.validation.openAPIV3Schema`, as the real server reports it; several: `spec.versions[i].schema...`)."""
    versions = ((crd.get("spec") or {}).get("versions")) or []
    out: list[Finding] = []
    for i, version in enumerate(versions):
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        prefix = "spec.validation.openAPIV3Schema" if len(versions) == 1 else \
            f"spec.versions[{i}].schema.openAPIV3Schema"
        out.extend(schema_findings(schema, prefix))
    return out
