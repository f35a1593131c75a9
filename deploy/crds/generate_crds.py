# ruff: noqa: E402, E501 - a data file: schema text (CEL rules, descriptions) reads best unwrapped
"""Writes the NodePool and NodeClaim CRDs from the validation rules in api/, so the cluster and
`nodeflow validate` enforce the same patterns, limits, enums and CEL rules."""

import sys
from pathlib import Path

import yaml

CRD_DIR = Path(__file__).resolve().parent
if str(CRD_DIR.parent.parent) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(CRD_DIR.parent.parent))
from api import labels
from api.budgets import NODES_PATTERN, REASONS, SCHEDULE_PATTERN
from api.duration import BUDGET_DURATION_PATTERN, NILLABLE_DURATION_PATTERN, TERMINATION_GRACE_PERIOD_PATTERN
from api.nodepool import CONSOLIDATION_POLICIES
from api.validation import (
    LABEL_VALUE_PATTERN,
    MAX_BUDGETS,
    MAX_LABELS,
    MAX_REQUIREMENTS,
    MIN_VALUES_RANGE,
    OPERATORS,
    QUALIFIED_NAME_PATTERN,
    QUANTITY_PATTERN,
    TAINT_EFFECTS,
    WEIGHT_RANGE,
    WELL_KNOWN_KARPENTER_LABELS,
    WELL_KNOWN_KUBERNETES_LABELS,
)


def s(desc=None, **kw):
    d = {"type": "string", **kw}
    if desc:
        d = {"description": desc, **d}
    return d


def label_rules(var):
    dom = f'{var}.find("^([^/]+)")'
    kube = ", ".join(f'"{k}"' for k in sorted(WELL_KNOWN_KUBERNETES_LABELS))
    karp = ", ".join(f'"{k}"' for k in sorted(WELL_KNOWN_KARPENTER_LABELS))
    return [
        {
            "message": 'label domain "kubernetes.io" is restricted',
            "rule": f'self.all(x, {var} in [{kube}] || {dom}.endsWith("node.kubernetes.io") || {dom}.endsWith("node-restriction.kubernetes.io") || !{dom}.endsWith("kubernetes.io"))',
        },
        {"message": 'label domain "k8s.io" is restricted', "rule": f'self.all(x, !{dom}.endsWith("k8s.io"))'},
        {
            "message": 'label domain "karpenter.sh" is restricted',
            "rule": f'self.all(x, {var} in [{karp}] || !{dom}.endsWith("karpenter.sh"))',
        },
        {
            "message": f'label "{labels.NODEPOOL_LABEL}" is restricted',
            "rule": f'self.all(x, {var} != "{labels.NODEPOOL_LABEL}")',
        },
        {
            "message": f'label "{labels.HOSTNAME_LABEL}" is restricted',
            "rule": f'self.all(x, {var} != "{labels.HOSTNAME_LABEL}")',
        },
    ]


def taints(desc):
    return {
        "description": desc,
        "type": "array",
        "items": {
            "description": "A taint the node gets (core/v1 Taint).",
            "type": "object",
            "required": ["effect", "key"],
            "properties": {
                "effect": s("NoSchedule, PreferNoSchedule or NoExecute.", enum=list(TAINT_EFFECTS)),
                "key": s("Taint key, a qualified name.", minLength=1, pattern=QUALIFIED_NAME_PATTERN),
                "timeAdded": s(format="date-time"),
                "value": s("Taint value, a label value.", maxLength=63, pattern=LABEL_VALUE_PATTERN),
            },
        },
    }


def requirements(desc):
    return {
        "description": desc,
        "type": "array",
        "maxItems": MAX_REQUIREMENTS,
        "items": {
            "description": "A node selector requirement with Karpenter's minValues.",
            "type": "object",
            "required": ["key", "operator"],
            "properties": {
                "key": s("Label key.", maxLength=316, pattern=QUALIFIED_NAME_PATTERN),
                "minValues": {
                    "description": "Minimum number of distinct values to keep flexible (In only).",
                    "type": "integer",
                    "minimum": MIN_VALUES_RANGE[0],
                    "maximum": MIN_VALUES_RANGE[1],
                },
                "operator": s("How the key relates to the values.", enum=list(OPERATORS)),
                "values": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN},
                    "x-kubernetes-list-type": "atomic",
                    "maxItems": 1000,
                },
            },
        },
        "x-kubernetes-validations": [
            {
                "message": "requirements with operator 'In' must have a value defined",
                "rule": "self.all(x, x.operator == 'In' ? has(x.values) && x.values.size() != 0 : true)",
            },
            {
                "message": "requirements operator 'Gt' or 'Lt' must have a single positive integer value",
                "rule": "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt') ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)",
            },
            {
                "message": "requirements with 'minValues' must have at least that many values specified in the 'values' field",
                "rule": "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
            },
            {
                "message": "requirements with operator 'Exists' or 'DoesNotExist' must not have values",
                "rule": "self.all(x, (x.operator == 'Exists' || x.operator == 'DoesNotExist') ? !has(x.values) || x.values.size() == 0 : true)",
            },
            *label_rules("x.key"),
        ],
    }


node_class_ref = {
    "description": "The cloud provider's node class (e.g. EC2NodeClass) the nodes are built from.",
    "type": "object",
    "required": ["group", "kind", "name"],
    "properties": {
        "group": s(
            "API group of the node class.",
            pattern="^[^/]*$",
            **{"x-kubernetes-validations": [{"message": "group may not be empty", "rule": "self != ''"}]},
        ),
        "kind": s(
            "Kind of the node class.",
            **{"x-kubernetes-validations": [{"message": "kind may not be empty", "rule": "self != ''"}]},
        ),
        "name": s(
            "Name of the node class.",
            **{"x-kubernetes-validations": [{"message": "name may not be empty", "rule": "self != ''"}]},
        ),
    },
}


def claim_spec_props(default_expire=True):
    return {
        "expireAfter": s(
            "Lifetime of a node before it is replaced, e.g. 720h, or Never. Forceful: not budgeted.",
            pattern=NILLABLE_DURATION_PATTERN,
            default="720h",
        ),
        "nodeClassRef": node_class_ref,
        "requirements": requirements(
            "Requirements that constrain the nodes' labels (instance type, zone, capacity type...)."
        ),
        "startupTaints": taints("Taints removed by a daemon after the node starts; pods need not tolerate them."),
        "taints": taints("Taints every node of the pool carries."),
        "terminationGracePeriod": s(
            "Longest a draining node may wait for pods (PDBs, do-not-disrupt) before they are deleted.",
            pattern=TERMINATION_GRACE_PERIOD_PATTERN,
        ),
    }


budget = {
    "description": "At most `nodes` may be disrupting at once, for the reasons listed, while the schedule's window is open.",
    "type": "object",
    "required": ["nodes"],
    "properties": {
        "duration": s("Length of each window opened by the schedule (h and m only).", pattern=BUDGET_DURATION_PATTERN),
        "nodes": s(
            'A count ("5") or a percentage of the pool\'s nodes, rounded up ("10%").',
            pattern=NODES_PATTERN,
            default="10%",
        ),
        "reasons": {
            "description": "Disruption reasons the budget limits; absent means all.",
            "type": "array",
            "maxItems": 50,
            "items": s(enum=list(REASONS)),
            "x-kubernetes-list-type": "set",
        },
        "schedule": s(
            "Cron expression (5 fields or @yearly, @monthly, @weekly, @daily, @hourly) opening a window.",
            pattern=SCHEDULE_PATTERN,
        ),
        "timeZone": s(
            "nodeflow extension: IANA time zone of the schedule (CronJob semantics, daylight saving included); UTC when absent.",
            minLength=1,
            maxLength=64,
            pattern=r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$",
        ),
    },
}


def quantity_map() -> dict:
    """A map of resource name to quantity (int or string), as status.allocatable and status.capacity are."""
    return {"type": "object",
            "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}}

# The fields every Kubernetes object carries; the API server validates metadata itself.
OBJECT_META = {"apiVersion": s(), "kind": s(), "metadata": {"type": "object"}}

nodepool_schema = {
    "description": "NodePool: a template for Karpenter-managed nodes and the rules for disrupting them.",
    "type": "object",
    "properties": {
        **OBJECT_META,
        "spec": {
            "type": "object",
            "required": ["template"],
            "properties": {
                "disruption": {
                    "description": "How and how fast nodes of this pool may be disrupted.",
                    "type": "object",
                    "default": {"consolidateAfter": "0s"},
                    "required": ["consolidateAfter"],
                    "properties": {
                        "budgets": {
                            "description": "Disruption budgets; the most restrictive active one wins.",
                            "type": "array",
                            "maxItems": MAX_BUDGETS,
                            "default": [{"nodes": "10%"}],
                            "items": budget,
                            "x-kubernetes-validations": [
                                {
                                    "message": "'schedule' must be set with 'duration'",
                                    "rule": "self.all(x, has(x.schedule) == has(x.duration))",
                                },
                                {
                                    "message": "'timeZone' requires 'schedule'",
                                    "rule": "self.all(x, !has(x.timeZone) || has(x.schedule))",
                                },
                            ],
                        },
                        "consolidateAfter": s(
                            "Time a node must be consolidatable before it is consolidated; Never disables consolidation.",
                            pattern=NILLABLE_DURATION_PATTERN,
                            default="0s",
                        ),
                        "consolidationPolicy": s(
                            "Which nodes consolidation may remove.",
                            enum=list(CONSOLIDATION_POLICIES),
                            default="WhenEmptyOrUnderutilized",
                        ),
                        "expireAfter": s(
                            "Deprecated (AKS NAP documentation): read as spec.template.spec.expireAfter.",
                            pattern=NILLABLE_DURATION_PATTERN,
                        ),
                    },
                },
                "limits": {
                    "description": "Upper bounds on the resources of all nodes of the pool.",
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "pattern": QUANTITY_PATTERN,
                        "x-kubernetes-int-or-string": True,
                    },
                },
                "template": {
                    "description": "What each node of the pool is launched with.",
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "metadata": {
                            "type": "object",
                            "properties": {
                                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                                "labels": {
                                    "type": "object",
                                    "maxProperties": MAX_LABELS,
                                    "additionalProperties": {
                                        "type": "string",
                                        "maxLength": 63,
                                        "pattern": LABEL_VALUE_PATTERN,
                                    },
                                    "x-kubernetes-validations": [
                                        {
                                            "message": "label keys must be qualified names",
                                            "rule": f"self.all(x, x.matches(r'{QUALIFIED_NAME_PATTERN}'))",
                                        },
                                        *label_rules("x"),
                                    ],
                                },
                            },
                        },
                        "spec": {
                            "type": "object",
                            "required": ["nodeClassRef", "requirements"],
                            "properties": claim_spec_props(),
                        },
                    },
                },
                "weight": {
                    "description": "Priority among NodePools (higher first).",
                    "type": "integer",
                    "format": "int32",
                    "minimum": WEIGHT_RANGE[0],
                    "maximum": WEIGHT_RANGE[1],
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "required": ["spec"],
    "x-kubernetes-validations": [
        {
            "message": "name must be at most 63 characters (it is the karpenter.sh/nodepool label value)",
            "rule": "self.metadata.name.size() <= 63",
        }
    ],
}

condition = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": s(),
        "status": s(enum=["True", "False", "Unknown"]),
        "reason": s(),
        "message": s(),
        "lastTransitionTime": s(format="date-time"),
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
}
claim_props = claim_spec_props()
claim_props["resources"] = {
    "description": "Resources the node must provide.",
    "type": "object",
    "properties": {
        "requests": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": QUANTITY_PATTERN,
                "x-kubernetes-int-or-string": True,
            },
        }
    },
}
nodeclaim_schema = {
    "description": "NodeClaim: the request for one node, and the record of the instance serving it.",
    "type": "object",
    "required": ["spec"],
    "properties": {
        **OBJECT_META,
        "spec": {
            "type": "object",
            "required": ["nodeClassRef", "requirements"],
            "properties": claim_props,
            "x-kubernetes-validations": [{"message": "spec is immutable", "rule": "self == oldSelf"}],
        },
        "status": {
            "type": "object",
            "properties": {
                "allocatable": quantity_map(),
                "capacity": quantity_map(),
                "conditions": {"type": "array", "items": condition},
                "imageID": s(),
                "lastPodEventTime": s(format="date-time"),
                "nodeName": s(),
                "providerID": s(),
            },
        },
    },
}


def crd(plural, kind, short, schema, columns):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.karpenter.sh"},
        "spec": {
            "group": "karpenter.sh",
            "scope": "Cluster",
            "names": {
                "categories": ["karpenter"],
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


HEADER = (
    "# Generated by deploy/crds/generate_crds.py from the rules in api/ (patterns, limits, enums, CEL);\n"
    "# do not edit: change api/ and run `python deploy/crds/generate_crds.py`. tests/api/test_crds.py checks it.\n"
)
np_cols = [
    {"name": "NodeClass", "type": "string", "jsonPath": ".spec.template.spec.nodeClassRef.name"},
    {"name": "Nodes", "type": "string", "jsonPath": ".status.resources.nodes"},
    {"name": "Weight", "type": "integer", "jsonPath": ".spec.weight", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]
nc_cols = [
    {"name": "Type", "type": "string", "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type"},
    {"name": "Capacity", "type": "string", "jsonPath": ".metadata.labels.karpenter\\.sh/capacity-type"},
    {"name": "Zone", "type": "string", "jsonPath": ".metadata.labels.topology\\.kubernetes\\.io/zone"},
    {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def render() -> dict[str, str]:
    """File name -> YAML text of each CRD."""

    def dump(doc: dict) -> str:
        return HEADER + yaml.safe_dump(doc, sort_keys=False, width=200)

    return {
        "karpenter.sh_nodepools.yaml": dump(crd("nodepools", "NodePool", ["np"], nodepool_schema, np_cols)),
        "karpenter.sh_nodeclaims.yaml": dump(crd("nodeclaims", "NodeClaim", ["nc"], nodeclaim_schema, nc_cols)),
    }


def main() -> None:
    for name, text in render().items():
        (CRD_DIR / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
