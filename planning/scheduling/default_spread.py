"""Cluster-default topology spread constraints in the simulation (kube-scheduler's PodTopologySpread
`defaultConstraints`; Karpenter v1.15 `--scheduler-config`, kubernetes-sigs/karpenter#3205).

kube-scheduler gives a pod that declares no `topologySpreadConstraints` the cluster's default constraints, each
with a selector it deduces from the pod's membership (helper.DefaultSelector): the selectors of the Services in the
pod's namespace that select it, merged, plus the selector of its controller when that is a ReplicationController,
ReplicaSet or StatefulSet. A pod with no deducible selector (a bare pod, a Job or DaemonSet pod no Service
selects) gets none. The constraints go into a copy of the pod's spec, so the simulation's preference relaxation
drops a ScheduleAnyway default as it drops a pod's own (preferences.py).

The setting (`DefaultSpread`): `none` (nodeflow's default, as Karpenter's empty `--scheduler-config`), `system`
(kube-scheduler's built-in defaults: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway), or a list read
from a file. When the snapshot lacks the owner or the Services (the worker's cache holds neither), the owner's
selector is read off the pod's labels: all of them for a ReplicaSet or ReplicationController (a Deployment's
ReplicaSet selects `pod-template-hash` too, so pods spread per revision, as in kube), less the per-pod and
per-revision labels for a StatefulSet. docs/semantics.md §3.5.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from api import labels as L
from api.yaml_load import safe_load
from planning.scheduling.process_setting import ProcessSetting


class SpreadMode(StrEnum):
    NONE = "none"
    SYSTEM = "system"
    LIST = "list"


@dataclass(frozen=True)
class DefaultSpread:
    """The default constraints (without selectors) and where they come from."""

    mode: SpreadMode
    constraints: tuple[Mapping[str, Any], ...] = ()
    source: str = ""  # the file of a list

    def __bool__(self) -> bool:
        return bool(self.constraints)

    def to_public(self) -> dict[str, Any]:
        return {"mode": self.mode.value, "source": self.source or None, "constraints": [dict(c) for c in
                                                                                        self.constraints]}


# kube-scheduler's systemDefaultConstraints, in its order (relaxation drops the first ScheduleAnyway first)
SYSTEM_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": L.HOSTNAME_LABEL, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "ScheduleAnyway"})
NONE = DefaultSpread(SpreadMode.NONE)
SYSTEM = DefaultSpread(SpreadMode.SYSTEM, SYSTEM_CONSTRAINTS)
DEFAULT = NONE  # as Karpenter v1.15 with no --scheduler-config (docs/semantics.md §12)
WHEN = ("DoNotSchedule", "ScheduleAnyway")


def validate(constraints: Iterable[Any]) -> tuple[Mapping[str, Any], ...]:
    """kube's ValidatePodTopologySpreadArgs (and Karpenter's): maxSkew > 0, a topologyKey, a known
    whenUnsatisfiable, no labelSelector or matchLabelKeys (deduced per pod), no repeated (key, action)."""
    out: list[Mapping[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        where = f"defaultConstraints[{i}]"
        if not isinstance(c, Mapping):
            raise ValueError(f"{where}: expected a mapping")
        skew, key, when = c.get("maxSkew"), c.get("topologyKey"), c.get("whenUnsatisfiable")
        if not isinstance(skew, int) or isinstance(skew, bool) or skew <= 0:
            raise ValueError(f"{where}.maxSkew: must be an integer greater than 0")
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}.topologyKey: required")
        if when not in WHEN:
            raise ValueError(f"{where}.whenUnsatisfiable: must be one of {', '.join(WHEN)}")
        for field in ("labelSelector", "matchLabelKeys"):
            if c.get(field) is not None:
                raise ValueError(f"{where}.{field}: must not be set; it is deduced for each pod")
        if (key, when) in seen:
            raise ValueError(f"{where}: duplicate topologyKey {key} with whenUnsatisfiable {when}")
        seen.add((key, when))
        out.append(dict(c))
    return tuple(out)


def from_document(doc: Any, source: str = "") -> DefaultSpread:
    """A list of constraints, `{defaultConstraints: [...]}`, or Karpenter's scheduler config
    `{podTopologySpread: {defaultConstraints: [...]}}`."""
    if isinstance(doc, Mapping):
        doc = (doc.get("podTopologySpread") or doc).get("defaultConstraints")
    if not isinstance(doc, list):
        raise ValueError("expected a list of topology spread constraints or a defaultConstraints list")
    constraints = validate(doc)
    return DefaultSpread(SpreadMode.LIST, constraints, source) if constraints else NONE


def load_default_spread(value: str) -> DefaultSpread:
    """`none`, `system`, or a YAML/JSON file of default constraints (raises ValueError saying what is wrong)."""
    text = (value or "").strip()
    if text.lower() in (SpreadMode.NONE, ""):
        return NONE
    if text.lower() == SpreadMode.SYSTEM:
        return SYSTEM
    try:
        raw = Path(text).read_text()
    except OSError as exc:
        raise ValueError(f"{text}: not none, system or a readable file ({exc.strerror})") from exc
    try:
        doc = json.loads(raw) if raw.lstrip().startswith(("{", "[")) else safe_load(raw)
        return from_document(doc, text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{text}: {exc}") from exc


_setting = ProcessSetting(DEFAULT)
configure = _setting.set  # the process's setting (the worker's --default-topology-spread, read once at start)
configured = _setting.get
default_spread = _setting.using  # inside a block (`nodeflow plan --default-topology-spread`, tests)


# the owner kinds helper.DefaultSelector reads (group, kind); any other controller contributes nothing
RC, RS, STS = ("", "ReplicationController"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")
OWNER_KINDS = (RC, RS, STS)
# labels a StatefulSet's pods carry that its selector never has: per pod, or per revision
STATEFUL_POD_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                                 "controller-revision-hash"})
Selector = dict[str, Any]


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _controller(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)


class Workloads:
    """The Services and owners (ReplicationControllers, ReplicaSets, StatefulSets) of a snapshot, and the selectors
    deduced from them (cached per namespace, owner and labels: a workload's pods share one)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.services: dict[str, list[Mapping[str, str]]] = {}
        self.owners: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}  # (ns, group, kind, name) -> selector
        for o in objects:
            meta = o.get("metadata") or {}
            ns, kind, spec = meta.get("namespace") or "default", o.get("kind", ""), o.get("spec") or {}
            if kind == "Service" and spec.get("selector") is not None:  # a nil selector selects nothing
                self.services.setdefault(ns, []).append(spec["selector"])
            elif (_group(o.get("apiVersion", "")), kind) in OWNER_KINDS:
                key = (ns, _group(o.get("apiVersion", "")), kind, meta.get("name", ""))
                self.owners[key] = spec.get("selector") or {}
        self._cache: dict[tuple[str, str, frozenset[tuple[str, str]]], Selector | None] = {}
        self.parsed: dict[str, Any] = {}  # planning/cluster.py with_default_spread: constraints parsed per workload

    def selector(self, meta: Mapping[str, Any], labels: Mapping[str, str]) -> Selector | None:
        """The pod's deduced selector, or None when nothing selects it (kube then gives it no default)."""
        ns = meta.get("namespace") or "default"
        owner = _controller(meta)
        key = (ns, (owner or {}).get("uid") or (owner or {}).get("name", ""), frozenset(labels.items()))
        if key not in self._cache:
            self._cache[key] = self._deduce(ns, owner, labels)
        return self._cache[key]

    def _deduce(self, ns: str, owner: Mapping[str, Any] | None, labels: Mapping[str, str]) -> Selector | None:
        match: dict[str, str] = {}
        for sel in self.services.get(ns, ()):
            if all(labels.get(k) == v for k, v in sel.items()):
                match.update(sel)
        expressions: list[Mapping[str, Any]] = []
        if owner is not None:
            kind = (_group(owner.get("apiVersion", "")), owner.get("kind", ""))
            own = self._owner_selector(ns, kind, owner.get("name", ""), labels)
            match.update(own.get("matchLabels") or {})  # all select the pod: equal where keys meet
            expressions += own.get("matchExpressions") or ()
        if not match and not expressions:
            return None  # kube: an empty selector would count every pod of the namespace
        out: Selector = {"matchLabels": match} if match else {}
        if expressions:
            out["matchExpressions"] = expressions
        return out

    def _owner_selector(self, ns: str, kind: tuple[str, str], name: str, labels: Mapping[str, str]) -> Mapping[
            str, Any]:
        """The owner's selector from the snapshot, else read off the pod's labels (module docstring)."""
        if kind not in OWNER_KINDS:
            return {}
        found = self.owners.get((ns, *kind, name))
        if found is not None:
            return found if kind != RC else {"matchLabels": found}
        drop = STATEFUL_POD_LABELS if kind == STS else frozenset()
        return {"matchLabels": {k: v for k, v in labels.items() if k not in drop}}


def defaulted_spec(spec: Mapping[str, Any], meta: Mapping[str, Any], labels: Mapping[str, str],
                   spread: DefaultSpread, workloads: Workloads) -> dict[str, Any] | None:
    """A copy of `spec` with the default constraints and the pod's deduced selector, or None when the pod keeps
    its spec: it has constraints of its own (all or nothing, as kube), or nothing selects it."""
    if not spread or spec.get("topologySpreadConstraints"):
        return None
    selector = workloads.selector(meta, labels)
    if selector is None:
        return None
    return {**spec, "topologySpreadConstraints": [{**c, "labelSelector": selector} for c in spread.constraints]}
