"""kube-apiserver's static cost check of CRD validation rules, computed as it computes it, so the emulator refuses
the CRDs a real server refuses (`estimated rule cost exceeds budget`) and accepts the ones it accepts
(Karpenter's own EC2NodeClass and NodeOverlay CRDs, whose map rules have no `maxProperties`).

The real server (k8s.io/apiextensions-apiserver `validation.go`, `schema/cel/compilation.go`, k8s.io/apiserver
`cel/common/schemas.go`, `cel/library/cost.go`, cel-go `checker/cost.go`):
  - gives every schema node a size bound: a string its `maxLength` x 4 (bytes), else its longest `enum` value, else
    the request size (3 MiB - 2); a list its `maxItems`, else (3 MiB - 2) / (its item's smallest JSON + 1); a map
    its `maxProperties`, else (3 MiB - 2) / (its value's smallest JSON + 6); a map key 0;
  - estimates each rule's worst cost in cel-go's units over the rule's syntax tree: 1 per identifier and field
    select, a macro (`all`, `exists`, `exists_one`, `map`, `filter`) its per-element body times the range's size,
    `matches`/`find` (string length + 1) x 0.1 times regex length x 0.25, `==` and string ordering 0.1 per unit of
    the smaller side, `in` a list its size, `startsWith`/`endsWith` 0.1 per unit of the argument, `split`/`replace`
    0.2 per unit, ...;
  - multiplies it by the number of times the rule can run: the product of the `maxItems`/`maxProperties` above it,
    or, when one of those is missing, 3 MiB / (the rule node's smallest JSON + 1);
  - refuses a rule above 10^7 and a CRD whose rules add up above 10^8, with the messages below.
Not modelled (docs/decisions.md §20): `messageExpression` costs; the minimum sizes cel-go carries next to the
maxima (only `replace` results use them here); functions outside the Kubernetes library cost 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import celpy
from lark import Token, Tree

Schema = dict[str, Any]
_ENV = celpy.Environment()

MAX_REQUEST_BYTES = 3 * 1024 * 1024
RULE_COST_LIMIT = 10_000_000  # StaticEstimatedCostLimit
CRD_COST_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
UNKNOWN = 2**64 - 1
STRING_FACTOR, REGEX_FACTOR = 0.1, 0.25
LIST_CREATE, MAP_CREATE = 10, 30
_PASS = {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member",
         "primary", "paren_expr"}
SCALARS = {"int", "uint", "double", "bool", "duration", "timestamp"}


@dataclass(frozen=True)
class Decl:
    """A schema node as CEL declares it: its kind, size bound (`MaxElements`) and smallest JSON encoding."""

    kind: str  # string | bytes | duration | timestamp | dyn | int | double | bool | list | map | object
    max_elements: int = 0
    min_size: int = 2
    elem: Decl | None = None
    fields: dict[str, Decl] = field(default_factory=dict)
    schema: Schema | None = None


KEY = Decl("string", 0, 2)  # a map's key type: the shared string type, with no size bound set (so 0)
_STRING_FORMATS = {"duration": ("duration", 3, 32), "date": ("timestamp", 12, 12), "date-time": ("timestamp", 21, 32)}


def decl_of(schema: Schema | None, root: bool = False) -> Decl | None:
    """The CEL declaration of `schema` (SchemaDeclType); None for a node CEL does not see."""
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string"):
        return Decl("dyn", _string_bound(schema, 0), 1, schema=schema)
    if root:
        schema = _with_object_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        item = decl_of(schema.get("items"), bool((schema.get("items") or {}).get("x-kubernetes-embedded-resource")))
        if item is None:
            return None
        bound = _bound(schema, "maxItems", (MAX_REQUEST_BYTES - 2) // (item.min_size + 1))
        return Decl("list", bound, 2, elem=item, schema=schema)
    if kind == "object":
        return _object_decl(schema)
    if kind == "string":
        fmt = schema.get("format")
        if fmt in _STRING_FORMATS:
            name, low, high = _STRING_FORMATS[fmt]
            return Decl(name, high, low, schema=schema)
        if fmt == "byte":
            return Decl("bytes", _bound(schema, "maxLength", MAX_REQUEST_BYTES - 2), 2, schema=schema)
        return Decl("string", _string_bound(schema, len(max(_enum_strings(schema), key=len, default=""))), 2,
                    schema=schema)
    simple = {"boolean": ("bool", 4), "number": ("double", 1), "integer": ("int", 1)}.get(str(kind))
    return Decl(simple[0], 0, simple[1], schema=schema) if simple else None


def _enum_strings(schema: Schema) -> list[str]:
    return [v for v in schema.get("enum") or [] if isinstance(v, str)]


def _string_bound(schema: Schema, enum_len: int) -> int:
    """maxLength in bytes (x4: a code point is up to 4), else the longest enum value, else the request size."""
    if "maxLength" in schema:
        return max(0, int(schema["maxLength"])) * 4
    if schema.get("enum") and not schema.get("x-kubernetes-int-or-string"):
        return enum_len
    return MAX_REQUEST_BYTES - 2


def _bound(schema: Schema, key: str, otherwise: int) -> int:
    return max(0, int(schema[key])) if key in schema else otherwise


def _object_decl(schema: Schema) -> Decl | None:
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        value = decl_of(extra, bool(extra.get("x-kubernetes-embedded-resource")))
        if value is None:
            return None
        bound = _bound(schema, "maxProperties", (MAX_REQUEST_BYTES - 2) // (value.min_size + 6))
        return Decl("map", bound, 2, elem=value, schema=schema)
    fields: dict[str, Decl] = {}
    required = set(schema.get("required") or [])
    min_size = 2  # {}
    for name, prop in (schema.get("properties") or {}).items():
        sub = decl_of(prop, bool(prop.get("x-kubernetes-embedded-resource")))
        if sub is None:
            continue
        fields[name] = sub
        if name in required and "default" not in prop:
            min_size += len(name) + sub.min_size + 4
    return Decl("object", 0, min_size, fields=fields, schema=schema)


def _with_object_meta(schema: Schema) -> Schema:
    """The root as rules see it: `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` declared."""
    props = dict(schema.get("properties") or {})
    for key in ("apiVersion", "kind"):
        props.setdefault(key, {"type": "string"})
    meta = dict(props.get("metadata") or {"type": "object"})
    meta["properties"] = {"name": {"type": "string"}, "generateName": {"type": "string"},
                          **(meta.get("properties") or {})}
    props["metadata"] = meta
    return {**schema, "properties": props}


@dataclass
class Val:
    """One sub-expression: its worst cost so far, its CEL kind, the schema node it reads (for its size) and a size
    known from a literal or a function's result (which takes precedence, as in cel-go)."""

    cost: int
    kind: str = "dyn"
    decl: Decl | None = None
    size: int | None = None
    elem_size: int | None = None  # a list literal's largest element
    elem_kind: str = "dyn"
    literal: Any = None

    def max_size(self) -> int:
        if self.size is not None:
            return self.size
        if self.decl is not None:
            return self.decl.max_elements
        return 1 if self.kind in SCALARS else UNKNOWN


def _mul(a: int, b: int) -> int:
    return min(UNKNOWN, a * b)


def _factor(size: int, per_unit: float) -> int:
    return UNKNOWN if size >= UNKNOWN else math.ceil(size * per_unit)


def _literal(token: Token) -> Val:
    text, kind = str(token), token.type
    if kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
        value = _unquote(text)
        return Val(0, "bytes" if kind == "BYTES_LIT" else "string", size=len(value), literal=value)
    if kind == "INT_LIT":
        return Val(0, "int", size=1, literal=int(text, 0))
    names = {"UINT_LIT": "uint", "FLOAT_LIT": "double", "BOOL_LIT": "bool", "NULL_LIT": "null"}
    return Val(0, names.get(kind, "dyn"), size=1)


_ESCAPE = re.compile(r"\\(?:[0-3][0-7]{2}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.DOTALL)


def _unquote(text: str) -> str:
    """A CEL string literal's value, escapes folded to one character (its length is what cel-go prices)."""
    raw = text[:1] in "rR" or (text[1:2] in "rR" and text[:1] in "bB")
    body = text.lstrip("rRbB")
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    body = body[len(quote):len(body) - len(quote)]
    return body if raw else _ESCAPE.sub("_", body)


def _args(exprlist: Any) -> list[Any]:
    return list(exprlist.children) if isinstance(exprlist, Tree) else []


def _leaf(t: Any) -> Any:
    while isinstance(t, Tree):
        t = t.children[0]
    return t


class _Coster:
    """cel-go's cost estimate of one rule (the worst case, `costEst.Max`), over cel-python's syntax tree.
    Also collects the fields a rule selects that its schema does not declare (cel-python has no type check)."""

    def __init__(self, root: Decl) -> None:
        self.root = root
        self.scopes: dict[str, list[Val]] = {}
        self.undefined: list[str] = []

    def cost(self, t: Any) -> Val:
        while isinstance(t, Tree) and t.data in _PASS and len(t.children) == 1 and isinstance(t.children[0], Tree):
            t = t.children[0]
        if isinstance(t, Token):
            return _literal(t) if t.type.endswith("_LIT") else Val(0)
        handler = getattr(self, f"_{t.data}", None)
        if handler is None:  # anything else: a call of cost 1 over its operands
            return Val(1 + sum(self.cost(c).cost for c in t.children if isinstance(c, Tree)))
        return handler(t)

    # ---- names, selects, literals --------------------------------------------------------------------------------
    def _ident(self, t: Tree) -> Val:
        name = str(t.children[0])
        if self.scopes.get(name):
            v = self.scopes[name][-1]
            return Val(1, v.kind, v.decl, v.size)
        # `self`, `oldSelf`; any other name's path is cut to the rule's node by the size estimator too
        return Val(1, self.root.kind if name in ("self", "oldSelf") else "type", self.root)

    def _literal(self, t: Tree) -> Val:
        return _literal(t.children[0])

    def _paren_expr(self, t: Tree) -> Val:
        return self.cost(t.children[0])

    def _list_lit(self, t: Tree) -> Val:
        items = [self.cost(c) for c in _args(t.children[0] if t.children else None)]
        return Val(LIST_CREATE + sum(v.cost for v in items), "list", size=len(items),
                   elem_size=max((v.max_size() for v in items), default=0),
                   elem_kind=items[0].kind if items else "dyn")

    def _map_lit(self, t: Tree) -> Val:
        parts = [self.cost(c) for c in _args(t.children[0] if t.children else None)]
        return Val(MAP_CREATE + sum(v.cost for v in parts), "map", size=len(parts) // 2)

    def _member_dot(self, t: Tree) -> Val:
        base, name = self.cost(t.children[0]), str(t.children[1])
        cost = base.cost + (1 if base.kind in ("map", "object") else 0)
        d = base.decl
        if d is None:  # a select on a computed value: its path is cut to the rule's node
            return Val(cost, "dyn", self.root)
        if d.kind == "object":
            s = d.schema or {}
            if s.get("properties") and name not in s["properties"] and not s.get("additionalProperties") \
                    and not s.get("x-kubernetes-preserve-unknown-fields"):
                self.undefined.append(name)
            sub = d.fields.get(name)
            return Val(cost, sub.kind if sub else "dyn", sub, None if sub else UNKNOWN)
        if d.kind == "map" and d.elem is not None:  # `m.key`: no size from the path; its type's, if scalar
            return Val(cost, d.elem.kind, None, 1 if d.elem.kind in SCALARS else UNKNOWN)
        return Val(cost, "dyn", None, UNKNOWN)

    def _member_index(self, t: Tree) -> Val:
        base, index = self.cost(t.children[0]), self.cost(t.children[1])
        cost = 1 + base.cost + index.cost
        if base.elem_size is not None:
            return Val(cost, base.elem_kind, size=base.elem_size)
        d = base.decl
        if d is None:  # a computed list (split(...)[0]): its `@items` path is cut to the rule's node
            return Val(cost, base.elem_kind, self.root)
        if d.elem is None:
            return Val(cost, "dyn", None, UNKNOWN)
        return Val(cost, d.elem.kind, d.elem)

    # ---- operators -----------------------------------------------------------------------------------------------
    def _conditionalor(self, t: Tree) -> Val:
        return Val(sum(self.cost(c).cost for c in t.children), "bool")  # Max: both sides

    _conditionaland = _conditionalor

    def _expr(self, t: Tree) -> Val:
        cond, yes, no = (self.cost(c) for c in t.children)
        return Val(cond.cost + max(yes.cost, no.cost), yes.kind if yes.kind != "dyn" else no.kind,
                   size=max(yes.max_size(), no.max_size()))

    def _unary(self, t: Tree) -> Val:
        operand = self.cost(t.children[-1])
        return Val(operand.cost + len(t.children) - 1, operand.kind)

    def _multiplication(self, t: Tree) -> Val:
        left, right = self.cost(t.children[0].children[0]), self.cost(t.children[1])
        return Val(1 + left.cost + right.cost, left.kind)

    def _addition(self, t: Tree) -> Val:
        op = t.children[0]
        left, right = self.cost(op.children[0]), self.cost(t.children[1])
        both = left.cost + right.cost
        kind = left.kind if left.kind != "dyn" else right.kind
        if op.data != "addition_add" or kind not in ("string", "bytes", "list"):
            return Val(1 + both, kind)
        size = min(UNKNOWN, left.max_size() + right.max_size())
        if kind == "list":
            return Val(1 + both, kind, size=size)
        return Val(_factor(size, STRING_FACTOR) + both, kind, size=size)

    def _relation(self, t: Tree) -> Val:
        op = t.children[0]
        left, right = self.cost(op.children[0]), self.cost(t.children[1])
        both = left.cost + right.cost
        if op.data == "relation_in":
            scan = right.max_size() if right.kind in ("list", "dyn") else 1
            return Val(scan + both, "bool")
        if op.data in ("relation_eq", "relation_ne") or {left.kind, right.kind} & {"string", "bytes"}:
            return Val(_factor(min(left.max_size(), right.max_size()), STRING_FACTOR) + both, "bool")
        return Val(1 + both, "bool")

    # ---- calls ---------------------------------------------------------------------------------------------------
    def _ident_arg(self, t: Tree) -> Val:
        name = str(t.children[0])
        nodes = _args(t.children[1] if len(t.children) > 1 else None)
        if name == "has" and nodes:  # a presence test costs nothing (PresenceTestHasCost(false)): its operand does
            select = nodes[0]
            while isinstance(select, Tree) and select.data != "member_dot" and len(select.children) == 1:
                select = select.children[0]
            self.cost(select)  # for undefined fields
            operand = select.children[0] if isinstance(select, Tree) and select.data == "member_dot" else select
            return Val(self.cost(operand).cost, "bool")
        args = [self.cost(a) for a in nodes]
        if name in _METHODS_AS_FUNCTIONS and args:
            return self._method(name, args[0], args[1:])
        base = sum(a.cost for a in args)
        if name in ("quantity", "isQuantity", "semver", "isSemver", "url", "isURL", "ip", "isIP", "cidr", "isCIDR") \
                and args:
            return Val(_factor(args[0].max_size(), STRING_FACTOR) + base, "dyn")
        if name == "dyn" and args:
            return Val(1 + base, args[0].kind, args[0].decl, args[0].size)
        kinds = {"size": "int", "int": "int", "uint": "uint", "double": "double", "duration": "duration",
                 "timestamp": "timestamp", "string": "string", "bytes": "bytes", "bool": "bool", "type": "type"}
        return Val(1 + base, kinds.get(name, "dyn"))

    def _member_dot_arg(self, t: Tree) -> Val:
        name = str(t.children[1])
        nodes = _args(t.children[2] if len(t.children) > 2 else None)
        target = self.cost(t.children[0])
        if name in _MACROS and nodes:
            return self._macro(name, target, nodes)
        return self._method(name, target, [self.cost(a) for a in nodes])

    def _method(self, name: str, target: Val, args: list[Val]) -> Val:
        base = target.cost + sum(a.cost for a in args)
        size = target.max_size()
        if name in ("matches", "find", "findAll") and args:
            cost = _mul(_factor(min(UNKNOWN, size + 1), STRING_FACTOR), _factor(args[0].max_size(), REGEX_FACTOR))
            kind = {"matches": "bool", "find": "string", "findAll": "list"}[name]
            return Val(cost + base, kind, size=None if name == "matches" else size, elem_kind="string")
        if name == "contains" and args:
            return Val(_mul(_factor(size, STRING_FACTOR), _factor(args[0].max_size(), STRING_FACTOR)) + base, "bool")
        if name in ("startsWith", "endsWith") and args:
            return Val(_factor(args[0].max_size(), STRING_FACTOR) + base, "bool")
        if name in ("lowerAscii", "upperAscii", "substring", "trim"):
            return Val(_factor(size, STRING_FACTOR) + base, "string", size=size)
        if name == "split":
            limit = args[1].literal if len(args) > 1 and isinstance(args[1].literal, int) else size
            return Val(_factor(size, 2 * STRING_FACTOR) + base, "list", size=limit, elem_kind="string")
        if name == "replace" and len(args) >= 2:
            return Val(_factor(size, 2 * STRING_FACTOR) + base, "string", size=_replaced_size(size, *args[:2]))
        if name == "join" and target.kind == "list":
            joined = self._joined_size(target, args[0] if args else None)
            return Val(_factor(joined, STRING_FACTOR) + base, "string", size=joined)
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            return Val(self._traversal(target) + base, "int" if "index" in name.lower() else "dyn")
        if name == "format":
            return Val(_factor(size, STRING_FACTOR) + base, "string")
        kinds = {"size": "int", "charAt": "string", "getHostname": "string", "asInteger": "int"}
        return Val(1 + base, kinds.get(name, "dyn"))

    def _element(self, target: Val) -> Val:
        """A list's element as an iteration variable or `@items` node sees it (a computed list's: the rule's node)."""
        if target.kind == "list" and target.elem_size is not None:
            return Val(0, target.elem_kind, self.root)
        if target.decl is None:
            return Val(0, target.elem_kind, self.root)
        if target.decl.kind == "map":
            return Val(0, "string", KEY)
        if target.decl.elem is None:
            return Val(0, "dyn", None, UNKNOWN)
        return Val(0, target.decl.elem.kind, target.decl.elem)

    def _traversal(self, target: Val) -> int:
        """isSorted, sum, min, max, indexOf: one pass over a list (its string elements priced by length)."""
        if target.kind != "list":
            return _factor(target.max_size(), STRING_FACTOR)
        per = 1
        element = self._element(target)
        if element.kind in ("string", "bytes"):
            per += _factor(element.max_size() if target.decl is not None else UNKNOWN, STRING_FACTOR)
        return _mul(target.max_size(), per)

    def _joined_size(self, target: Val, sep: Val | None) -> int:
        count = target.max_size()
        elem = self._element(target).max_size() if target.decl is not None else UNKNOWN
        joined = _mul(count, elem)
        if sep is not None:
            joined = min(UNKNOWN, joined + _mul(sep.max_size(), max(0, count - 1)))
        return joined

    def _macro(self, name: str, target: Val, nodes: list[Any]) -> Val:
        """The comprehension a macro expands to: range + init + result + size(range) x (condition + step)."""
        var = str(_leaf(nodes[0]))
        self.scopes.setdefault(var, []).append(self._element(target))
        try:
            bodies = [self.cost(n).cost for n in nodes[1:]]
        finally:
            self.scopes[var].pop()
        per, fixed = _MACRO_COSTS[name][len(bodies) - 1] if name == "map" else _MACRO_COSTS[name][0]
        n = target.max_size()
        total = target.cost + fixed + _mul(n, per + sum(bodies))
        if name in ("map", "filter"):
            return Val(total, "list", size=n)
        return Val(total, "bool")


# per element (condition + step, beside the bodies) and once (init + result), from cel-go's macro expansions:
# all: !_strictly_false(accu) [2] + accu && p [1]; result accu [1]. exists: !_strictly_false(!accu) [3] +
# accu || p [1]. exists_one: p ? accu + 1 [2] : accu; result accu == 1 [2]. map: accu + [f] [12], init [] [10],
# result [1]; with a filter the step is p ? (accu + [f]) : accu. filter: p ? accu + [x] [13] : accu.
_MACRO_COSTS: dict[str, list[tuple[int, int]]] = {
    "all": [(3, 1)], "exists": [(4, 1)], "exists_one": [(2, 2)], "map": [(12, 11), (12, 11)], "filter": [(13, 11)]}
_MACROS = set(_MACRO_COSTS)
_METHODS_AS_FUNCTIONS = {"matches", "startsWith", "endsWith", "contains"}


def _replaced_size(size: int, old: Val, new: Val) -> int:
    """The largest result of `s.replace(old, new)` (the Kubernetes library's estimate)."""
    old_min = old.size if old.size is not None else 0
    if old_min == 0:
        return min(UNKNOWN, _mul(size + 1 if size < UNKNOWN else size, new.max_size()) + size)
    if new.max_size() <= old_min:
        return size
    return _mul(math.ceil(size / old_min), new.max_size())


@cache
def _parse(rule: str) -> Tree:
    """A rule's syntax tree (read only; parsed once: a CRD's rules are checked on every create and update)."""
    return _ENV.compile(rule)


def rule_cost(rule: str, schema: Schema, root: bool = False) -> int:
    """The worst-case cost of `rule` sitting on `schema`, once (cel-go's `EstimateCost(...).Max`)."""
    decl = decl_of(schema, root)
    if decl is None:
        return 0
    return _Coster(decl).cost(_parse(rule)).cost


def undefined_fields(rule: str, schema: Schema) -> list[str]:
    """The fields `rule` selects on an object whose schema does not declare them: the real server's type check
    refuses such a CRD (`compilation failed: ... undefined field 'x'`); cel-python has no type check."""
    coster = _Coster(decl_of(schema) or Decl("dyn"))
    coster.cost(_parse(rule))
    return list(dict.fromkeys(coster.undefined))


def budget_message(what: str, cost: int, limit: int) -> str:
    """kube-apiserver's words for a cost over its limit (`getCostErrorMessage`)."""
    factor = cost / limit
    shown = "more than 100x" if factor > 100 else f"{factor:f}x" if factor < 1.5 else f"{factor:.1f}x"
    return (f"{what} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


def rule_findings(rule: str, schema: Schema) -> list[str]:
    """Why `rule` on `schema`, run once (a node with no list or map above it), is refused: empty when it fits."""
    cost = rule_cost(rule, schema)
    return [budget_message("estimated rule cost", cost, RULE_COST_LIMIT)] if cost > RULE_COST_LIMIT else []


@dataclass(frozen=True)
class Finding:
    """A rule (or a whole schema) the real API server refuses, at its CRD field path, with its words."""

    field: str
    rule: str
    reasons: tuple[str, ...]

    @property
    def detail(self) -> str:
        return "; ".join(self.reasons)

    def __str__(self) -> str:
        return f"{self.field}: Forbidden: {self.detail}"


def _max_elements(schema: Schema) -> int | None:
    """How many times a node's children can occur per occurrence of it (`extractMaxElements`); None: unbounded."""
    kind = schema.get("type")
    if kind == "object" and "additionalProperties" in schema:
        return int(schema["maxProperties"]) if "maxProperties" in schema else None
    if kind == "array":
        return int(schema["maxItems"]) if "maxItems" in schema else None
    return 1


def _nodes(schema: Schema, path: str, times: int | None) -> Iterator[tuple[Schema, str, int | None]]:
    """Every schema node with its CRD field path and how many times its rules can run (None: unbounded)."""
    yield schema, path, times
    per = _max_elements(schema)
    inner = None if times is None or per is None else times * max(0, per)
    for key, sub in (schema.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.properties[{key}]", inner)
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}.items", inner)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.additionalProperties", inner)


def schema_findings(schema: Schema, path: str = "openAPIV3Schema") -> list[Finding]:
    """Every rule under `schema` over the per-rule budget, then the CRD-wide total, as kube-apiserver reports them."""
    out: list[Finding] = []
    total, expensive = 0, []
    for node, where, times in _nodes(schema, path, 1):
        decl = decl_of(node, root=node is schema)
        if decl is None:
            continue
        runs = times if times is not None else MAX_REQUEST_BYTES // (decl.min_size + 1)
        for i, entry in enumerate(node.get("x-kubernetes-validations") or []):
            rule, at = str(entry.get("rule", "")), f"{where}.x-kubernetes-validations[{i}].rule"
            if not rule.strip():
                continue
            cost = _mul(_Coster(decl).cost(_parse(rule)).cost, runs)
            if cost > RULE_COST_LIMIT:
                out.append(Finding(at, rule, (budget_message("estimated rule cost", cost, RULE_COST_LIMIT),)))
            total = min(UNKNOWN, total + cost)
            if cost >= CRD_COST_LIMIT // 100:
                expensive = sorted([*expensive, (cost, at, rule)], key=lambda e: -e[0])[:4]
    if total > CRD_COST_LIMIT:
        out.extend(Finding(at, rule, ("contributed to estimated rule cost total exceeding cost limit for entire "
                                      "OpenAPIv3 schema",)) for _, at, rule in expensive)
        out.append(Finding(path, "", (budget_message("x-kubernetes-validations estimated rule cost total for entire "
                                                     "OpenAPIv3 schema", total, CRD_COST_LIMIT),)))
    return out


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
