"""Validation of NodePool and NodeClaim documents: every rule of docs/semantics.md §1.1 plus Karpenter v1's CRD rules.

Each problem is one string naming the field path and the rule, e.g.
`spec.disruption.budgets[1]: 'schedule' must be set with 'duration'`. All problems are reported, not
just the first. The same rules are in deploy/crds/ (OpenAPI patterns, maxItems, CEL), so a cluster
rejects what `nodeflow validate` rejects; the exceptions (parsing the cron expression, IANA time zone
names) cannot be written in a CRD and would make Karpenter block every disruption of the pool.
"""

from __future__ import annotations

from typing import Any

from api import labels
from api.budgets import budget_problems
from api.duration import check_duration, matches_pattern
from api.meta import NUMERIC_OPERATOR_MESSAGE, NUMERIC_OPERATORS, REQUIREMENT_OPERATORS
from api.nodepool import (
    CONSOLIDATION_POLICIES,
    DEFAULT_CONSOLIDATE_AFTER,
    DEFAULT_CONSOLIDATION_POLICY,
    Budget,
    move_deprecated_fields,
)
from api.suggest import did_you_mean

OPERATORS = REQUIREMENT_OPERATORS
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_BUDGETS = 50
MAX_REQUIREMENTS = 100
MAX_LABELS = 100
MIN_VALUES_RANGE = (1, 50)
WEIGHT_RANGE = (1, 100)
REPLICAS_MINIMUM = 0
# The only limit a static NodePool (spec.replicas set) may have: it keeps a node count, not an amount of cpu/memory.
STATIC_LIMITS = ("nodes",)
STATIC_LIMITS_MESSAGE = ("only 'limits.nodes' is supported on static NodePools (spec.replicas is set): the pool "
                         "keeps a number of nodes, so only a node count can bound it")
STATIC_WEIGHT_MESSAGE = ("'weight' is not supported on static NodePools (spec.replicas is set): weight ranks NodePools "
                         "for pending pods, and a static pool launches only its replicas")
STATIC_TRANSITION_MESSAGE = ("Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
                             "provisioning modes")

QUALIFIED_NAME_PATTERN = (
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Well-known labels a NodePool may constrain or set although their domain is restricted (Karpenter v1 CRD).
WELL_KNOWN_KUBERNETES_LABELS = frozenset({
    "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region", "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/windows-build",
    labels.INSTANCE_TYPE_LABEL,
})
WELL_KNOWN_KARPENTER_LABELS = frozenset({labels.CAPACITY_TYPE_LABEL})
RESTRICTED_LABELS = frozenset({labels.HOSTNAME_LABEL, labels.NODEPOOL_LABEL})

NODEPOOL_FIELDS = {"apiVersion", "kind", "metadata", "spec", "status"}
NODEPOOL_SPEC_FIELDS = {"template", "disruption", "limits", "weight", "replicas"}
TEMPLATE_FIELDS = {"metadata", "spec"}
TEMPLATE_METADATA_FIELDS = {"labels", "annotations"}
CLAIM_SPEC_FIELDS = {
    "requirements", "nodeClassRef", "taints", "startupTaints", "expireAfter", "terminationGracePeriod",
}
DISRUPTION_FIELDS = {"consolidationPolicy", "consolidateAfter", "budgets"}
BUDGET_FIELDS = {"nodes", "reasons", "schedule", "duration", "timeZone"}
REQUIREMENT_FIELDS = {"key", "operator", "values", "minValues"}
NODE_CLASS_REF_FIELDS = {"group", "kind", "name"}
TAINT_FIELDS = {"key", "value", "effect", "timeAdded"}


class _Problems:
    """Collects `path: message` strings."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")

    def unknown(self, path: str, obj: dict[str, Any], allowed: set[str]) -> None:
        for key in obj:
            if key not in allowed:
                self.add(f"{path}.{key}" if path else str(key), "unknown field" + did_you_mean(key, allowed))

    def not_one_of(self, path: str, value: object, allowed: tuple[str, ...] | list[str], hint: str = "") -> None:
        """An enum value outside `allowed`, with the closest allowed value when it looks like a typo."""
        self.add(path, f"{value!r} is not one of {', '.join(allowed)}{hint}{did_you_mean(value, allowed)}")

    def section(self, path: str, obj: Any, allowed: set[str]) -> dict[str, Any] | None:
        """An optional object whose keys must be among `allowed`: the object, or None when absent or invalid."""
        m = self.mapping(path, obj)
        if m is not None:
            self.unknown(path, m, allowed)
        return m

    def mapping(self, path: str, obj: Any, required: bool = False, item: bool = False) -> dict[str, Any] | None:
        """`item`: an element of a list, where null is not "absent" but an invalid element."""
        if obj is None:
            if item:
                self.add(path, "must be an object, got null")
            elif required:
                self.add(path, "required field is missing")
            return None
        if not isinstance(obj, dict):
            self.add(path, f"must be an object, got {type(obj).__name__}")
            return None
        return obj

    def listing(self, path: str, obj: Any, max_items: int | None = None) -> list[Any]:
        if obj is None:
            return []
        if not isinstance(obj, list):
            self.add(path, f"must be a list, got {type(obj).__name__}")
            return []
        if max_items is not None and len(obj) > max_items:
            self.add(path, f"has {len(obj)} items, at most {max_items} allowed (maxItems)")
        return obj

    def string(self, path: str, obj: Any, required: bool = False) -> str | None:
        if obj is None:
            if required:
                self.add(path, "required field is missing")
            return None
        if not isinstance(obj, str):
            self.add(path, f"must be a string, got {type(obj).__name__}")
            return None
        return obj


def _domain(key: str) -> str:
    """What the CRD's CEL calls the domain: `key.find("^([^/]+)")`, the whole key when it has no prefix."""
    return key.split("/", 1)[0]


def label_value_problem(value: str) -> str | None:
    """Why `value` cannot be a label value (requirement values and taint values follow the same rule)."""
    if matches_pattern(LABEL_VALUE_PATTERN, value) and len(value) <= 63:
        return None
    return f"{value!r} is not a valid label value (at most 63 of [A-Za-z0-9-_.])"


def label_key_problem(key: str) -> str | None:
    """Karpenter's restrictions on label keys a NodePool may set or require."""
    if not matches_pattern(QUALIFIED_NAME_PATTERN, key) or len(key) > 316:
        return f"{key!r} is not a qualified name (optional DNS prefix and '/', then a name of [A-Za-z0-9-_.])"
    if key in RESTRICTED_LABELS:
        return f"label {key!r} is restricted"
    domain = _domain(key)
    if domain.endswith("kubernetes.io") and key not in WELL_KNOWN_KUBERNETES_LABELS and not (
        domain.endswith("node.kubernetes.io") or domain.endswith("node-restriction.kubernetes.io")
    ):
        return 'label domain "kubernetes.io" is restricted'
    if domain.endswith("k8s.io"):
        return 'label domain "k8s.io" is restricted'
    if domain.endswith("karpenter.sh") and key not in WELL_KNOWN_KARPENTER_LABELS:
        return 'label domain "karpenter.sh" is restricted'
    return None


def _check_duration_field(p: _Problems, path: str, field: str, value: Any) -> None:
    if value is None:
        return
    problem = check_duration(field, value)
    if problem:
        p.add(path, problem)


def _check_requirements(p: _Problems, path: str, obj: Any, required: bool) -> None:
    if obj is None:
        if required:
            p.add(path, "required field is missing")
        return
    for i, req in enumerate(p.listing(path, obj, MAX_REQUIREMENTS)):
        rpath = f"{path}[{i}]"
        r = p.mapping(rpath, req, item=True)
        if r is None:
            continue
        p.unknown(rpath, r, REQUIREMENT_FIELDS)
        key = p.string(f"{rpath}.key", r.get("key"), required=True)
        if key is not None:
            problem = label_key_problem(key)
            if problem:
                p.add(f"{rpath}.key", problem)
        op = p.string(f"{rpath}.operator", r.get("operator"), required=True)
        if op is not None and op not in OPERATORS:
            p.not_one_of(f"{rpath}.operator", op, OPERATORS)
        values = r.get("values")
        vals = p.listing(f"{rpath}.values", values)
        for j, v in enumerate(vals):
            if not isinstance(v, str):
                p.add(f"{rpath}.values[{j}]", f"must be a string, got {type(v).__name__}")
            elif (problem := label_value_problem(v)) is not None:
                p.add(f"{rpath}.values[{j}]", problem)
        if op == "In" and not vals:
            p.add(rpath, "requirements with operator 'In' must have a value defined")
        if op in NUMERIC_OPERATORS and not (len(vals) == 1 and isinstance(vals[0], str) and vals[0].isdigit()):
            p.add(rpath, NUMERIC_OPERATOR_MESSAGE)
        if op in ("Exists", "DoesNotExist") and vals:
            p.add(rpath, f"requirements with operator {op!r} must not have values")
        mv = r.get("minValues")
        if mv is not None:
            if not isinstance(mv, int) or isinstance(mv, bool):
                p.add(f"{rpath}.minValues", f"must be an integer, got {type(mv).__name__}")
            elif not MIN_VALUES_RANGE[0] <= mv <= MIN_VALUES_RANGE[1]:
                p.add(f"{rpath}.minValues", f"must be between {MIN_VALUES_RANGE[0]} and {MIN_VALUES_RANGE[1]}")
            elif op == "In" and len(vals) < mv:
                p.add(rpath, "requirements with 'minValues' must have at least that many values specified in "
                             "the 'values' field")


def _check_taints(p: _Problems, path: str, obj: Any) -> None:
    for i, t in enumerate(p.listing(path, obj)):
        tpath = f"{path}[{i}]"
        taint = p.mapping(tpath, t, item=True)
        if taint is None:
            continue
        p.unknown(tpath, taint, TAINT_FIELDS)
        key = p.string(f"{tpath}.key", taint.get("key"), required=True)
        if key is not None and not matches_pattern(QUALIFIED_NAME_PATTERN, key):
            p.add(f"{tpath}.key", f"{key!r} is not a qualified name")
        value = p.string(f"{tpath}.value", taint.get("value"))
        if value is not None and (problem := label_value_problem(value)) is not None:
            p.add(f"{tpath}.value", problem)
        effect = p.string(f"{tpath}.effect", taint.get("effect"), required=True)
        if effect is not None and effect not in TAINT_EFFECTS:
            p.not_one_of(f"{tpath}.effect", effect, TAINT_EFFECTS)


def _check_node_class_ref(p: _Problems, path: str, obj: Any) -> None:
    ref = p.mapping(path, obj, required=True)
    if ref is None:
        return
    p.unknown(path, ref, NODE_CLASS_REF_FIELDS)
    for field in ("group", "kind", "name"):
        value = p.string(f"{path}.{field}", ref.get(field), required=True)
        if value == "":
            p.add(f"{path}.{field}", f"{field} may not be empty")
    group = ref.get("group")
    if isinstance(group, str) and "/" in group:
        p.add(f"{path}.group", "must not contain '/' (a group, not an apiVersion)")


def _check_labels(p: _Problems, path: str, obj: Any) -> None:
    lbls = p.mapping(path, obj)
    if lbls is None:
        return
    if len(lbls) > MAX_LABELS:
        p.add(path, f"has {len(lbls)} labels, at most {MAX_LABELS} allowed (maxProperties)")
    for key, value in lbls.items():
        problem = label_key_problem(str(key))
        if problem:
            p.add(f"{path}[{key}]", problem)
        if not isinstance(value, str):
            p.add(f"{path}[{key}]", f"value must be a string, got {type(value).__name__}")
        elif (problem := label_value_problem(value)) is not None:
            p.add(f"{path}[{key}]", problem)


def _check_budget(p: _Problems, path: str, obj: Any) -> None:
    b = p.mapping(path, obj, item=True)
    if b is None:
        return
    p.unknown(path, b, BUDGET_FIELDS)
    typed = True
    nodes = b.get("nodes", "10%")
    if not isinstance(nodes, str):
        p.add(f"{path}.nodes", f"must be a string such as \"10%\" or \"5\", got {type(nodes).__name__}")
        if isinstance(nodes, bool) or not isinstance(nodes, int):
            typed = False
        nodes = str(nodes)
    for field in ("schedule", "duration", "timeZone"):
        if b.get(field) is not None and not isinstance(b[field], str):
            p.add(f"{path}.{field}", f"must be a string, got {type(b[field]).__name__}")
            typed = False
    reasons = b.get("reasons")
    if reasons is not None and (not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons)):
        p.add(f"{path}.reasons", "must be a list of strings")
        typed = False
    if not typed:
        return
    budget = Budget(nodes=nodes, reasons=reasons, schedule=b.get("schedule"), duration=b.get("duration"),
                    time_zone=b.get("timeZone"))
    for problem in budget_problems(budget):
        p.add(path, problem)


def _check_disruption(p: _Problems, path: str, obj: Any) -> None:
    d = p.mapping(path, obj)
    if d is None:
        return
    p.unknown(path, d, DISRUPTION_FIELDS)
    policy = d.get("consolidationPolicy")
    if policy is not None and policy not in CONSOLIDATION_POLICIES:
        p.not_one_of(f"{path}.consolidationPolicy", policy, CONSOLIDATION_POLICIES, "")
    _check_duration_field(p, f"{path}.consolidateAfter", "consolidateAfter", d.get("consolidateAfter"))
    for i, budget in enumerate(p.listing(f"{path}.budgets", d.get("budgets"), MAX_BUDGETS)):
        _check_budget(p, f"{path}.budgets[{i}]", budget)


def _check_claim_spec(p: _Problems, path: str, spec: dict[str, Any], extra_fields: set[str] = frozenset()) -> None:
    p.unknown(path, spec, CLAIM_SPEC_FIELDS | extra_fields)
    _check_requirements(p, f"{path}.requirements", spec.get("requirements"), required=True)
    _check_node_class_ref(p, f"{path}.nodeClassRef", spec.get("nodeClassRef"))
    _check_taints(p, f"{path}.taints", spec.get("taints"))
    _check_taints(p, f"{path}.startupTaints", spec.get("startupTaints"))
    _check_duration_field(p, f"{path}.expireAfter", "expireAfter", spec.get("expireAfter"))
    _check_duration_field(p, f"{path}.terminationGracePeriod", "terminationGracePeriod",
                          spec.get("terminationGracePeriod"))


def _check_metadata(p: _Problems, obj: dict[str, Any], max_name: int) -> None:
    meta = p.mapping("metadata", obj.get("metadata"), required=True)
    if meta is None:
        return
    name = p.string("metadata.name", meta.get("name"), required=True)
    if name is not None and (not matches_pattern(DNS_SUBDOMAIN_PATTERN, name) or len(name) > max_name):
        p.add("metadata.name", f"{name!r} must be a lowercase DNS name of at most {max_name} characters "
                               "([a-z0-9-.], starting and ending with a letter or digit)")
    for field in ("labels", "annotations"):  # ObjectMeta: maps of string to string
        for key, value in (p.mapping(f"metadata.{field}", meta.get(field)) or {}).items():
            if not isinstance(value, str):
                p.add(f"metadata.{field}[{key}]", f"value must be a string, got {type(value).__name__}")
    finalizers = p.listing("metadata.finalizers", meta.get("finalizers"))
    if not all(isinstance(f, str) for f in finalizers):
        p.add("metadata.finalizers", "must be a list of strings")


def _check_header(p: _Problems, obj: dict[str, Any], kind: str) -> None:
    if obj.get("apiVersion") != labels.API_VERSION:
        p.add("apiVersion", f"must be {labels.API_VERSION!r}, got {obj.get('apiVersion')!r}")
    if obj.get("kind") != kind:
        p.add("kind", f"must be {kind!r}, got {obj.get('kind')!r}")


def nodepool_warnings(obj: Any) -> list[str]:
    """Non-fatal findings: the deprecated spec.disruption.expireAfter (AKS NAP docs), budgets that block a reason for
    good (`nodes: "0"` or `"0%"` without a schedule), which is legal but often a mistake, and static_warnings."""
    obj, warnings = move_deprecated_fields(obj)
    spec = obj.get("spec") if isinstance(obj, dict) else None
    disruption = spec.get("disruption") if isinstance(spec, dict) else None
    budgets = disruption.get("budgets") if isinstance(disruption, dict) else None
    for i, b in enumerate(budgets if isinstance(budgets, list) else []):
        if isinstance(b, dict) and b.get("nodes") in ("0", "0%") and b.get("schedule") is None:
            reasons = b.get("reasons")
            which = ", ".join(map(str, reasons)) if isinstance(reasons, list) else "every reason"
            warnings.append(f"spec.disruption.budgets[{i}]: nodes {b['nodes']!r} without a schedule blocks "
                            f"voluntary disruption ({which or 'no reason'}) at all times")
    return warnings + static_warnings(spec)


def validate_nodepool(obj: Any) -> list[str]:
    """Every problem of a NodePool document (as a dict); an empty list when it is valid."""
    p = _Problems()
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    obj, _ = move_deprecated_fields(obj)
    p.unknown("", obj, NODEPOOL_FIELDS)
    _check_header(p, obj, "NodePool")
    # The name is the value of the karpenter.sh/nodepool label on every node: at most 63 characters.
    _check_metadata(p, obj, max_name=63)
    spec = p.mapping("spec", obj.get("spec"), required=True)
    if spec is None:
        return p.items
    p.unknown("spec", spec, NODEPOOL_SPEC_FIELDS)
    template = p.mapping("spec.template", spec.get("template"), required=True)
    if template is not None:
        p.unknown("spec.template", template, TEMPLATE_FIELDS)
        tmeta = p.mapping("spec.template.metadata", template.get("metadata"))
        if tmeta is not None:
            p.unknown("spec.template.metadata", tmeta, TEMPLATE_METADATA_FIELDS)
            _check_labels(p, "spec.template.metadata.labels", tmeta.get("labels"))
            annotations = p.mapping("spec.template.metadata.annotations", tmeta.get("annotations"))
            for key, value in (annotations or {}).items():
                if not isinstance(value, str):
                    p.add(f"spec.template.metadata.annotations[{key}]", "value must be a string")
        tspec = p.mapping("spec.template.spec", template.get("spec"), required=True)
        if tspec is not None:
            _check_claim_spec(p, "spec.template.spec", tspec)
    _check_disruption(p, "spec.disruption", spec.get("disruption"))
    limits = p.mapping("spec.limits", spec.get("limits"))
    for resource, qty in (limits or {}).items():
        if isinstance(qty, bool) or not isinstance(qty, (int, str)) or not matches_pattern(QUANTITY_PATTERN, str(qty)):
            p.add(f"spec.limits[{resource}]", f"{qty!r} is not a resource quantity (e.g. 1000, 100Gi, 500m)")
    weight = spec.get("weight")
    if weight is not None:
        if not isinstance(weight, int) or isinstance(weight, bool):
            p.add("spec.weight", f"must be an integer, got {type(weight).__name__}")
        elif not WEIGHT_RANGE[0] <= weight <= WEIGHT_RANGE[1]:
            p.add("spec.weight", f"must be between {WEIGHT_RANGE[0]} and {WEIGHT_RANGE[1]}, got {weight}")
    _check_static(p, spec, limits)
    return p.items


def _check_static(p: _Problems, spec: dict[str, Any], limits: dict[str, Any] | None) -> None:
    """Karpenter's rules for static NodePools (docs/semantics.md §14.1): replicas >= 0, only limits.nodes, no weight."""
    replicas = spec.get("replicas")
    if replicas is None:
        return
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        p.add("spec.replicas", f"must be an integer, got {type(replicas).__name__}")
    elif replicas < REPLICAS_MINIMUM:
        p.add("spec.replicas", f"must be at least {REPLICAS_MINIMUM}, got {replicas}")
    for resource in limits or {}:
        if resource not in STATIC_LIMITS:
            p.add(f"spec.limits[{resource}]", STATIC_LIMITS_MESSAGE)
    if spec.get("weight") is not None:
        p.add("spec.weight", STATIC_WEIGHT_MESSAGE)


def static_warnings(spec: Any) -> list[str]:
    """What a static NodePool sets but Karpenter ignores (consolidation), and a node limit that holds it below its
    replicas or leaves no room to replace a drifted node before removing it."""
    if not isinstance(spec, dict) or spec.get("replicas") is None:
        return []
    out = []
    disruption = spec.get("disruption")
    defaults = {"consolidationPolicy": DEFAULT_CONSOLIDATION_POLICY, "consolidateAfter": DEFAULT_CONSOLIDATE_AFTER}
    for field, default in defaults.items():  # the CRD defaults both: only a value someone chose is worth a word
        if isinstance(disruption, dict) and disruption.get(field, default) != default:
            out.append(f"spec.disruption.{field} is ignored on static NodePools (spec.replicas is set): their nodes "
                       "are never consolidated")
    replicas = spec.get("replicas")
    limits = spec.get("limits") if isinstance(spec.get("limits"), dict) else {}
    limit = int(str(limits["nodes"])) if str(limits.get("nodes", "")).isdigit() else None
    if isinstance(replicas, int) and limit is not None:
        if limit < replicas:
            out.append(f"spec.limits.nodes ({limit}) is below spec.replicas ({replicas}): the pool is held at {limit} "
                       "node(s)")
        elif limit == replicas and replicas > 0:
            out.append(f"spec.limits.nodes equals spec.replicas ({replicas}): a drifted node cannot get its "
                       "replacement before it goes, so drift is terminate-first (the node goes, then the pool "
                       "re-creates it); leave room above replicas to replace first")
    return out


def validate_nodeclaim(obj: Any) -> list[str]:
    """Every problem of a NodeClaim document (as a dict); an empty list when it is valid."""
    p = _Problems()
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    p.unknown("", obj, NODEPOOL_FIELDS)
    _check_header(p, obj, "NodeClaim")
    _check_metadata(p, obj, max_name=253)
    spec = p.mapping("spec", obj.get("spec"), required=True)
    if spec is not None:
        _check_claim_spec(p, "spec", spec, extra_fields={"resources"})
        resources = p.mapping("spec.resources", spec.get("resources"))
        if resources is not None:
            p.unknown("spec.resources", resources, {"requests"})
            for name, qty in (p.mapping("spec.resources.requests", resources.get("requests")) or {}).items():
                if isinstance(qty, bool) or not matches_pattern(QUANTITY_PATTERN, str(qty)):
                    p.add(f"spec.resources.requests[{name}]", f"{qty!r} is not a resource quantity")
    return p.items
