"""A cluster snapshot: the objects the planner reads, from a YAML stream or a `kind: List` (docs/contracts.md §1).

NodePools and NodeClaims become models; Nodes, Pods and PodDisruptionBudgets stay plain dicts shaped
as the API returns them (timestamps stay strings), so 5,000 nodes and 75,000 pods load in seconds:
JSON is read with `json`, large YAML (over FAST_YAML_BYTES) with the Rust parser `yaml_rs` when it is
installed (about 6x faster than libyaml-backed PyYAML), everything else with PyYAML. Any input the fast
path refuses is re-read with PyYAML, which also gives the error positions.
Every problem is reported as `FILE: document N (kind/name): problem`, never as a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from api.catalog import CATALOG_KIND, InstanceType, InstanceTypeCatalog
from api.disruption_policy import API_VERSION as POLICY_API_VERSION
from api.disruption_policy import KIND as POLICY_KIND
from api.disruption_policy import DisruptionPolicy
from api.ec2nodeclass import API_VERSION as EC2_API_VERSION
from api.ec2nodeclass import EC2NodeClass
from api.node_overlay import API_VERSION as OVERLAY_API_VERSION
from api.node_overlay import KIND as OVERLAY_KIND
from api.node_overlay import NodeOverlay
from api.nodeclaim import NodeClaim
from api.nodepool import NodePool
from api.object_shapes import check_shape
from api.yaml_load import KubeLoader

KARPENTER_V1 = "karpenter.sh/v1"
# kind -> apiVersions accepted for it
KNOWN_KINDS: dict[str, tuple[str, ...]] = {
    "NodePool": (KARPENTER_V1,),
    "NodeClaim": (KARPENTER_V1,),
    "EC2NodeClass": (EC2_API_VERSION,),
    "Node": ("v1",),
    "Pod": ("v1",),
    "PodDisruptionBudget": ("policy/v1",),
    CATALOG_KIND: ("nodeflow.dev/v1alpha1",),
    POLICY_KIND: (POLICY_API_VERSION,),
    OVERLAY_KIND: (OVERLAY_API_VERSION,),
}
NAMESPACED = {"Pod", "PodDisruptionBudget"}


class SnapshotError(ValueError):
    """Unusable snapshot input; the message names the file, the document and the problem."""


_LOADER = KubeLoader  # fast and safe, timestamps kept as strings (api/yaml_load.py)


def location(source: str, doc: int, item: int | None, obj: Any = None) -> str:
    """`FILE: document N[ item M] (kind/name)`: where an object sits in its file, for messages."""
    place = f"{source}: document {doc}" + ("" if item is None else f" item {item}")
    if isinstance(obj, dict):
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else "?"
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None
        ns = meta.get("namespace") if isinstance(meta, dict) and isinstance(meta.get("namespace"), str) else None
        ident = f"{ns}/{name}" if ns and kind in NAMESPACED else (name or "?")
        place += f" ({kind}/{ident})"
    return place


def _pydantic_problem(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        path = ""
        for loc in err["loc"]:
            path += f"[{loc}]" if isinstance(loc, int) else (f".{loc}" if path else str(loc))
        parts.append(f"{path or '(object)'}: {err['msg']}")
    return "; ".join(parts)


@dataclass
class Snapshot:
    """The objects of one cluster snapshot, by kind."""

    node_pools: list[NodePool] = field(default_factory=list)
    node_claims: list[NodeClaim] = field(default_factory=list)
    node_classes: list[EC2NodeClass] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    catalog: InstanceTypeCatalog | None = None
    others: list[dict[str, Any]] = field(default_factory=list)
    source: str = "<objects>"
    warnings: list[str] = field(default_factory=list)
    disruption_policies: list[DisruptionPolicy] = field(default_factory=list)
    node_overlays: list[NodeOverlay] = field(default_factory=list)

    @classmethod
    def from_objects(cls, objects: Iterable[Any], source: str = "<objects>") -> Snapshot:
        """Build from already-parsed objects (one per document); `kind: List` objects are expanded."""
        snap = cls(source=source)
        builder = _Builder(snap)
        for n, obj in enumerate(objects, start=1):
            builder.add_document(obj, n)
        builder.finish()
        return snap

    def node_pool(self, name: str) -> NodePool | None:
        for pool in self.node_pools:
            if pool.name == name:
                return pool
        return None

    def to_objects(self) -> list[dict[str, Any]]:
        """All objects as dicts, in kind order, ready for `yaml.safe_dump_all`."""
        out: list[dict[str, Any]] = [p.to_dict() for p in self.node_pools]
        out += [c.to_dict() for c in self.node_claims]
        out += [c.to_dict() for c in self.node_classes]
        out += self.nodes + self.pods + self.pdbs
        out += [p.to_dict() for p in self.disruption_policies]
        out += [o.to_dict() for o in self.node_overlays]
        if self.catalog is not None:
            out.append(self.catalog.model_dump(mode="json", by_alias=True))
        out += self.others
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump_all(self.to_objects(), sort_keys=False)


class _Builder:
    """Sorts documents into a Snapshot, checking just what later code relies on."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.seen: dict[tuple[str, str, str], tuple[int, int | None]] = {}
        self.catalog_types: list[InstanceType] = []
        self.catalog_doc: InstanceTypeCatalog | None = None

    def add_document(self, obj: Any, doc: int) -> None:
        if obj is None:
            return
        if is_list(obj):
            items = obj["items"] or []
            if not isinstance(items, list):
                raise SnapshotError(f"{location(self.snap.source, doc, None, obj)}: 'items' must be a list")
            for i, item in enumerate(items, start=1):
                self.add(item, doc, i)
            return
        self.add(obj, doc, None)

    def add(self, obj: Any, doc: int, item: int | None) -> None:
        def fail(problem: str) -> SnapshotError:  # the location is formatted only when there is a problem
            return SnapshotError(f"{location(self.snap.source, doc, item, obj)}: {problem}")

        if not isinstance(obj, dict):
            raise fail(f"expected a Kubernetes object (a mapping), got {type(obj).__name__}")
        kind, api_version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
        if not isinstance(kind, str) or not kind:
            raise fail("missing 'kind'")
        if not isinstance(api_version, str) or not api_version:
            raise fail("missing 'apiVersion'")
        if kind in KNOWN_KINDS and api_version not in KNOWN_KINDS[kind]:
            raise fail(f"apiVersion {api_version!r} is not supported for {kind}; use {KNOWN_KINDS[kind][0]}")
        name = meta.get("name") if isinstance(meta, dict) else None
        if kind != CATALOG_KIND and (not isinstance(name, str) or not name):
            raise fail("missing 'metadata.name'")
        if isinstance(meta, dict) and meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
            raise fail("metadata.namespace must be a string")
        if kind in KNOWN_KINDS:
            ns = (meta.get("namespace") or "default") if kind in NAMESPACED else ""
            key = (kind, ns, name or "")
            first = self.seen.get(key)
            if first is not None:
                seen_at = f"document {first[0]}" + ("" if first[1] is None else f" item {first[1]}")
                raise fail(f"duplicate {kind} (first seen at {seen_at})")
            self.seen[key] = (doc, item)
        try:
            self._route(kind, obj)
        except ValidationError as exc:
            raise fail(_pydantic_problem(exc)) from None
        except ValueError as exc:
            raise fail(str(exc)) from None

    def _route(self, kind: str, obj: dict[str, Any]) -> None:
        snap = self.snap
        check_shape(kind, obj)
        if kind == "NodePool":
            pool = NodePool.model_validate(obj)
            snap.warnings += [f"NodePool/{pool.name}: {w}" for w in pool.warnings]
            snap.node_pools.append(pool)
        elif kind == "NodeClaim":
            snap.node_claims.append(NodeClaim.model_validate(obj))
        elif kind == "EC2NodeClass":
            snap.node_classes.append(EC2NodeClass.model_validate(obj))
        elif kind == "Node":
            snap.nodes.append(obj)
        elif kind == "Pod":
            snap.pods.append(obj)
        elif kind == "PodDisruptionBudget":
            snap.pdbs.append(obj)
        elif kind == POLICY_KIND:
            snap.disruption_policies.append(DisruptionPolicy.model_validate(obj))
        elif kind == OVERLAY_KIND:
            snap.node_overlays.append(NodeOverlay.model_validate(obj))
        elif kind == CATALOG_KIND:
            cat = InstanceTypeCatalog.model_validate(obj)
            names = {t.name for t in self.catalog_types}
            dup = sorted(names & {t.name for t in cat.instance_types})
            if dup:
                raise ValueError(f"instance types {', '.join(dup)} are already defined by another catalog document")
            self.catalog_types += cat.instance_types
            self.catalog_doc = self.catalog_doc or cat
        else:
            snap.others.append(obj)

    def finish(self) -> None:
        if self.catalog_doc is not None:
            self.snap.catalog = InstanceTypeCatalog(
                apiVersion=self.catalog_doc.api_version,
                metadata=self.catalog_doc.metadata,
                instanceTypes=self.catalog_types,
                vmMemoryOverheadPercent=self.catalog_doc.vm_memory_overhead_percent,
                region=self.catalog_doc.region,
            )


def load_object(obj: dict[str, Any]) -> Any:
    """One cluster object checked and parsed as the loader does: the model of a NodePool, NodeClaim or
    EC2NodeClass, else the object itself. Raises SnapshotError as `from_objects` would."""
    snap = Snapshot.from_objects([obj])
    for items in (snap.node_pools, snap.node_claims, snap.node_classes, snap.nodes, snap.pods, snap.pdbs,
                  snap.disruption_policies, snap.node_overlays, snap.others):
        if items:
            return items[0]
    raise SnapshotError(f"{obj.get('kind')} is not a cluster object")


FAST_YAML_BYTES = 1_000_000


def _fast_parse(text: str) -> list[Any] | None:
    """JSON, or large YAML through yaml_rs; None when the input needs PyYAML (or yaml_rs is absent)."""
    if text.lstrip().startswith(("{", "[")):  # JSON (kubectl -o json) parses far faster than YAML
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, list) else [data]
    if len(text) < FAST_YAML_BYTES:
        return None
    try:
        import yaml_rs
    except ImportError:
        return None
    try:
        data = yaml_rs.loads(text, parse_datetime=False)
    except Exception:  # any refusal: PyYAML decides, and reports where
        return None
    return data if isinstance(data, list) else [data]


def _documents(text: str, source: str) -> Iterator[Any]:
    fast = _fast_parse(text)
    if fast is not None:
        yield from fast
        return
    loader = _LOADER(text)
    n = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    return
                doc = _plain(loader, loader.get_node())
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
                problem = getattr(exc, "problem", None) or str(exc)
                raise SnapshotError(f"{source}: document {n + 1}: invalid YAML{at}: {problem}") from None
            n += 1
            yield doc
    finally:
        loader.dispose()


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _plain(loader: Any, node: Node) -> Any:
    """Node tree -> Python objects; a tight version of SafeConstructor for the common tags (1.5x faster)."""
    cls = node.__class__
    if cls is ScalarNode:
        return node.value if node.tag == _STR_TAG else loader.construct_object(node, deep=True)
    if cls is SequenceNode:
        return [_plain(loader, v) for v in node.value]
    if cls is MappingNode and not any(k.tag == _MERGE_TAG for k, _ in node.value):
        out = {}
        for k, v in node.value:
            key = _plain(loader, k)
            try:
                out[key] = _plain(loader, v)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "found an unhashable key", k.start_mark
                ) from None
        return out
    return loader.construct_object(node, deep=True)


def is_list(obj: Any) -> bool:
    """A `kind: List` (or `NodeList`, ...) wrapper whose `items` are the objects."""
    return isinstance(obj, dict) and isinstance(obj.get("kind"), str) and obj["kind"].endswith("List") \
        and "items" in obj


def read_text(path: str | Path) -> str:
    """File text (`-` is standard input), with read problems as SnapshotError."""
    source = str(path)
    try:
        if source == "-":
            import sys

            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SnapshotError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{source}: not UTF-8 text: {exc.reason}") from None


def located_objects(text: str, source: str) -> Iterator[tuple[int, int | None, Any]]:
    """(document number, item number in a List or None, object) for every object of a YAML/JSON stream."""
    for n, doc in enumerate(_documents(text, source), start=1):
        if doc is None:
            continue
        if is_list(doc) and isinstance(doc["items"], list):
            for i, item in enumerate(doc["items"], start=1):
                yield n, i, item
        else:
            yield n, None, doc


def parse_snapshot(text: str, source: str = "<string>") -> Snapshot:
    """Parse snapshot text (YAML stream, `kind: List`, or JSON)."""
    return Snapshot.from_objects(_documents(text, source), source=source)


def load_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot file; `-` reads standard input."""
    return parse_snapshot(read_text(path), str(path))
