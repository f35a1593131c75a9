# ruff: noqa: E402, E501 - a data file: schema text (CEL rules, descriptions) reads best unwrapped
"""Writes the NodePool, NodeClaim, EC2NodeClass and DisruptionPolicy CRDs from the validation rules in api/, so the
cluster and `nodeflow validate` enforce the same patterns, limits, enums and CEL rules."""

import sys
from pathlib import Path

import yaml

CRD_DIR = Path(__file__).resolve().parent
if str(CRD_DIR.parent.parent) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(CRD_DIR.parent.parent))
from api import capacity_buffer as cb
from api import disruption_policy as dp
from api import labels
from api import node_overlay as no
from api import policy_controls as pc
from api import policy_fields as pf
from api.budgets import NODES_PATTERN, REASON_VALUES, SCHEDULE_PATTERN
from api.duration import BUDGET_DURATION_PATTERN, NILLABLE_DURATION_PATTERN, TERMINATION_GRACE_PERIOD_PATTERN
from api.ec2nodeclass import AMI_FAMILIES, METADATA_DEFAULTS
from api.ec2nodeclass import GROUP as EC2_GROUP
from api.ec2nodeclass_validation import (
    ALIAS_MAX_LENGTH,
    ALIAS_PATTERN,
    AMI_ID_PATTERN,
    EVICTION_SIGNALS,
    HOP_LIMIT_RANGE,
    HTTP_TOKENS,
    INSTANCE_STORE_POLICIES,
    MAX_BLOCK_DEVICE_MAPPINGS,
    MAX_TAGS,
    MAX_TERM_TAGS,
    MAX_TERMS,
    RESERVED_KEYS,
    RESTRICTED_TAG_PREFIX,
    RESTRICTED_TAGS,
    SECURITY_GROUP_ID_PATTERN,
    SUBNET_ID_PATTERN,
    VOLUME_SIZE_PATTERN,
    VOLUME_TYPES,
)
from api.meta import NUMERIC_OPERATOR_MESSAGE
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
    REPLICAS_MINIMUM,
    STATIC_LIMITS_MESSAGE,
    STATIC_TRANSITION_MESSAGE,
    STATIC_WEIGHT_MESSAGE,
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
                "message": NUMERIC_OPERATOR_MESSAGE,
                "rule": "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)",
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
            "items": s(enum=list(REASON_VALUES)),
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
                            "Time a node must be consolidatable before it is consolidated; Never disables consolidation. Optional "
                            "since Karpenter v1.15 (kubernetes-sigs/karpenter#3220): unset is 0s.",
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
                "replicas": {
                    "description": "Static NodePool: keep exactly this many nodes, whatever the pods need (Karpenter's StaticCapacity). Consolidation settings are ignored, only limits.nodes and no weight are allowed, and it cannot be added or removed later.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": REPLICAS_MINIMUM,
                },
                "weight": {
                    "description": "Priority among NodePools (higher first).",
                    "type": "integer",
                    "format": "int32",
                    "minimum": WEIGHT_RANGE[0],
                    "maximum": WEIGHT_RANGE[1],
                },
            },
            "x-kubernetes-validations": [
                {"message": STATIC_TRANSITION_MESSAGE, "rule": "has(self.replicas) == has(oldSelf.replicas)"},
                {
                    "message": STATIC_LIMITS_MESSAGE,
                    # the same meaning as `self.limits.all(k, k == 'nodes')` at a constant cost (limits has no maxProperties)
                    "rule": "!has(self.replicas) || !has(self.limits) || self.limits.size() == 0 || (self.limits.size() == 1 && 'nodes' in self.limits)",
                },
                {"message": STATIC_WEIGHT_MESSAGE, "rule": "!has(self.replicas) || !has(self.weight)"},
            ],
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
# Karpenter's NodePoolStatus (pkg/apis/v1/nodepool_status.go), written by runtime/nodepool_status.py.
nodepool_schema["properties"]["status"] = {
    "description": "What the pool has provisioned and whether it can launch (runtime/nodepool_status.py).",
    "type": "object",
    "properties": {
        "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map",
                       "x-kubernetes-list-map-keys": ["type"]},
        "nodeClassObservedGeneration": {"type": "integer", "format": "int64"},
        "nodes": {"description": "The count of nodes associated with this NodePool.", "type": "integer",
                  "format": "int64", "default": 0},
        "resources": {**quantity_map(), "description": "The resources that have been provisioned."},
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


def crd(plural, kind, short, schema, columns, group="karpenter.sh", version="v1", categories=("karpenter",),
        scope="Cluster"):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "categories": list(categories),
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
            },
            "versions": [
                {
                    "name": version,
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
# Karpenter's columns (pkg/apis/crds/karpenter.sh_*.yaml additionalPrinterColumns), in its order; nodeflow adds the
# allowed disruptions per reason (runtime/nodepool_status.py) as one more -o wide column.
np_cols = [
    {"name": "NodeClass", "type": "string", "jsonPath": ".spec.template.spec.nodeClassRef.name"},
    {"name": "Nodes", "type": "string", "jsonPath": ".status.nodes"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Weight", "type": "integer", "jsonPath": ".spec.weight", "priority": 1},
    {"name": "CPU", "type": "string", "jsonPath": ".status.resources.cpu", "priority": 1},
    {"name": "Memory", "type": "string", "jsonPath": ".status.resources.memory", "priority": 1},
    {"name": "Allowed Disruptions", "type": "string",
     "jsonPath": ".metadata.annotations.nodeflow\\.dev/allowed-disruptions", "priority": 1},
]
nc_cols = [
    {"name": "Type", "type": "string", "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type"},
    {"name": "Capacity", "type": "string", "jsonPath": ".metadata.labels.karpenter\\.sh/capacity-type"},
    {"name": "Zone", "type": "string", "jsonPath": ".metadata.labels.topology\\.kubernetes\\.io/zone"},
    {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "ImageID", "type": "string", "jsonPath": ".status.imageID", "priority": 1},
    {"name": "ID", "type": "string", "jsonPath": ".status.providerID", "priority": 1},
    {"name": "NodePool", "type": "string", "jsonPath": ".metadata.labels.karpenter\\.sh/nodepool", "priority": 1},
    {"name": "NodeClass", "type": "string", "jsonPath": ".spec.nodeClassRef.name", "priority": 1},
    {"name": "Drifted", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Drifted")].status',
     "priority": 1},
]


# ---- EC2NodeClass (karpenter.k8s.aws/v1) -------------------------------------------------------------------
def term_tags():
    return {
        "description": "Tags the resource must carry; the value '*' matches any value of the key.",
        "type": "object",
        "minProperties": 1,
        "maxProperties": MAX_TERM_TAGS,
        "additionalProperties": {"type": "string"},
        "x-kubernetes-validations": [
            {"message": "empty tag keys or values aren't supported", "rule": "self.all(k, k != '' && self[k] != '')"}
        ],
    }


def selector_terms(desc, props, rules, min_items=1):
    """A list of selector terms: ORed, fields of one term ANDed. CEL checks every term (Karpenter's `!self.all`
    form only rejects when all terms are bad)."""
    return {
        "description": desc,
        "type": "array",
        "minItems": min_items,
        "maxItems": MAX_TERMS,
        "items": {"type": "object", "properties": props},
        "x-kubernetes-validations": rules,
    }


def exclusive(field, others, where):
    has_other = " || ".join(f"has(x.{o})" for o in others)
    return {"message": f"'{field}' is mutually exclusive, cannot be set with a combination of other fields in {where}",
            "rule": f"self.all(x, !has(x.{field}) || !({has_other}))"}


def at_least_one(fields):
    listed = ", ".join(f"'{f}'" for f in fields)
    return {"message": f"expected at least one, got none, [{listed}]",
            "rule": "self.all(x, " + " || ".join(f"has(x.{f})" for f in fields) + ")"}


subnet_terms = selector_terms(
    "Subnets to launch into (one is chosen per instance).",
    {"id": s("Subnet id.", pattern=SUBNET_ID_PATTERN), "tags": term_tags()},
    [{"message": "subnetSelectorTerms cannot be empty", "rule": "self.size() != 0"}, at_least_one(["tags", "id"]),
     exclusive("id", ["tags"], "a subnet selector term")],
)
security_group_terms = selector_terms(
    "Security groups every instance gets (all that match).",
    {"id": s("Security group id.", pattern=SECURITY_GROUP_ID_PATTERN), "name": s("Group name (not the Name tag).", minLength=1),
     "tags": term_tags()},
    [{"message": "securityGroupSelectorTerms cannot be empty", "rule": "self.size() != 0"},
     at_least_one(["tags", "id", "name"]), exclusive("id", ["tags", "name"], "a security group selector term"),
     exclusive("name", ["tags", "id"], "a security group selector term")],
)
alias_families = "[" + ",".join(f"'{f}'" for f in ("al2", "al2023", "bottlerocket", "windows2019", "windows2022")) + "]"
ami_terms = selector_terms(
    "Images to launch; the newest (not deprecated) per architecture and variant is used.",
    {
        "alias": s(
            "EKS-optimized AMI as family@version, e.g. al2023@latest or al2023@v20240807.",
            maxLength=ALIAS_MAX_LENGTH,
            **{"x-kubernetes-validations": [
                {"message": "'alias' is improperly formatted, must match the format 'family@version'", "rule": f"self.matches('{ALIAS_PATTERN}')"},
                {"message": "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022'",
                 "rule": f"self.split('@')[0] in {alias_families}"},
                {"message": "windows families may only specify version 'latest'",
                 "rule": "self.split('@')[0] in ['windows2019','windows2022'] ? self.split('@')[1] == 'latest' : true"},
            ]},
        ),
        "id": s("Image id.", pattern=AMI_ID_PATTERN),
        "name": s("Image name; EC2 wildcards (* and ?) allowed.", minLength=1),
        "owner": s("Account id, self, amazon or aws-marketplace; a name term defaults to self and amazon.", minLength=1),
        "ssmParameter": s("SSM parameter (name or ARN) whose value is the image id.", minLength=1),
        "tags": term_tags(),
    },
    [at_least_one(["tags", "id", "name", "alias", "ssmParameter"]),
     exclusive("id", ["alias", "tags", "name", "owner"], "amiSelectorTerms"),
     exclusive("alias", ["id", "tags", "name", "owner"], "amiSelectorTerms"),
     {"message": "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
      "rule": "!(self.exists(x, has(x.alias)) && self.size() != 1)"}],
)


def key_map(field, keys, desc, quantity=False):
    listed = ",".join(f"'{k}'" for k in keys)
    rules = [{"message": f"valid keys for {field} are [{listed}]", "rule": f"self.all(x, x in [{listed}])"}]
    if quantity:
        rules.append({"message": f"{field} value cannot be a negative resource quantity", "rule": "self.all(x, !self[x].startsWith('-'))"})
    # maxProperties: only len(keys) keys are allowed, and the bound keeps the all() rules within the cost budget.
    return {"description": desc, "type": "object", "maxProperties": len(keys), "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": rules}


kubelet = {
    "description": "Kubelet settings of the nodes.",
    "type": "object",
    "properties": {
        "clusterDNS": {"type": "array", "items": {"type": "string"}},
        "cpuCFSQuota": {"type": "boolean"},
        "evictionHard": key_map("evictionHard", EVICTION_SIGNALS, "Hard eviction thresholds."),
        "evictionMaxPodGracePeriod": {"type": "integer", "format": "int32"},
        "evictionSoft": key_map("evictionSoft", EVICTION_SIGNALS, "Soft eviction thresholds."),
        "evictionSoftGracePeriod": key_map("evictionSoftGracePeriod", EVICTION_SIGNALS, "Grace period per soft threshold."),
        "imageGCHighThresholdPercent": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100},
        "imageGCLowThresholdPercent": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100},
        "kubeReserved": key_map("kubeReserved", RESERVED_KEYS, "Resources reserved for Kubernetes daemons.", quantity=True),
        "maxPods": {"type": "integer", "format": "int32", "minimum": 0},
        "podsPerCore": {"type": "integer", "format": "int32", "minimum": 0},
        "systemReserved": key_map("systemReserved", RESERVED_KEYS, "Resources reserved for OS daemons.", quantity=True),
    },
    "x-kubernetes-validations": [
        {"message": "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
         "rule": "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"},
        {"message": "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
         "rule": "has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true"},
        {"message": "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
         "rule": "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true"},
    ],
}
block_device_mappings = {
    "description": "Volumes of the instance; at most one is the kubelet's root volume.",
    "type": "array",
    "maxItems": MAX_BLOCK_DEVICE_MAPPINGS,
    "items": {
        "type": "object",
        "properties": {
            "deviceName": s("Device name, e.g. /dev/xvda."),
            "ebs": {
                "type": "object",
                "properties": {
                    "deleteOnTermination": {"type": "boolean"},
                    "encrypted": {"type": "boolean"},
                    "iops": {"type": "integer", "format": "int64"},
                    "kmsKeyID": s("KMS key for encryption."),
                    "snapshotID": s("EBS snapshot to restore."),
                    "throughput": {"type": "integer", "format": "int64"},
                    "volumeInitializationRate": {"type": "integer", "format": "int32", "minimum": 100, "maximum": 300},
                    "volumeSize": s("Size in G, Gi, T or Ti.", pattern=VOLUME_SIZE_PATTERN),
                    "volumeType": s(enum=list(VOLUME_TYPES)),
                },
                "x-kubernetes-validations": [{"message": "snapshotID or volumeSize must be defined", "rule": "has(self.snapshotID) || has(self.volumeSize)"}],
            },
            "rootVolume": {"type": "boolean"},
        },
    },
    "x-kubernetes-validations": [
        {"message": "must have only one blockDeviceMappings with rootVolume", "rule": "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1"}
    ],
}
restricted_tag_rules = [{"message": "empty tag keys aren't supported", "rule": "self.all(k, k != '')"}]
restricted_tag_rules += [{"message": f"tag contains a restricted tag matching {t}", "rule": f"self.all(k, k != '{t}')"} for t in RESTRICTED_TAGS]
restricted_tag_rules.append({"message": "tag contains a restricted tag matching kubernetes.io/cluster/",
                             "rule": f"self.all(k, !k.startsWith('{RESTRICTED_TAG_PREFIX}'))"})
family_rules = [
    {"message": f"if set, amiFamily must be '{fam}' or 'Custom' when using a{'n' if fam[0] == 'A' else ''} {fam} alias",
     "rule": f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == '{fam.lower()}') ? (self.amiFamily == 'Custom' || self.amiFamily == '{fam}') : true)"}
    for fam in AMI_FAMILIES if fam != "Custom"
]
ec2nodeclass_schema = {
    "description": "EC2NodeClass: how Karpenter launches nodes on EC2 (image, network, IAM, disks, kubelet).",
    "type": "object",
    "required": ["spec"],
    "properties": {
        **OBJECT_META,
        "spec": {
            "type": "object",
            "required": ["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"],
            "properties": {
                "amiFamily": s("User data format and default disks; inferred from an alias.", enum=list(AMI_FAMILIES)),
                "amiSelectorTerms": ami_terms,
                "associatePublicIPAddress": {"type": "boolean"},
                "blockDeviceMappings": block_device_mappings,
                "capacityReservationSelectorTerms": {"type": "array", "maxItems": MAX_TERMS, "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                "context": s("Reserved EC2 fleet context."),
                "detailedMonitoring": {"type": "boolean"},
                "enclaveOptions": {"type": "object", "properties": {"enabled": {"type": "boolean"}}},
                "instanceProfile": s("Existing instance profile (exclusive with role).", **{"x-kubernetes-validations": [{"message": "instanceProfile cannot be empty", "rule": "self != ''"}]}),
                "instanceStorePolicy": s(enum=list(INSTANCE_STORE_POLICIES)),
                "ipPrefixCount": {"type": "integer", "format": "int32", "minimum": 0},
                "kubelet": kubelet,
                "metadataOptions": {
                    "description": "Instance metadata service options; IMDSv2 only, hop limit 1 by default.",
                    "type": "object",
                    "default": dict(METADATA_DEFAULTS),
                    "properties": {
                        "httpEndpoint": s(enum=["enabled", "disabled"], default="enabled"),
                        "httpProtocolIPv6": s(enum=["enabled", "disabled"], default="disabled"),
                        "httpPutResponseHopLimit": {"type": "integer", "format": "int64", "minimum": HOP_LIMIT_RANGE[0], "maximum": HOP_LIMIT_RANGE[1], "default": 1},
                        "httpTokens": s(enum=list(HTTP_TOKENS), default="required"),
                    },
                },
                "role": s("IAM role of the nodes; an instance profile is made for it (exclusive with instanceProfile).", **{"x-kubernetes-validations": [{"message": "role cannot be empty", "rule": "self != ''"}]}),
                "securityGroupSelectorTerms": security_group_terms,
                "subnetSelectorTerms": subnet_terms,
                "tags": {"description": "Tags of the instances, volumes and launch templates.", "type": "object", "maxProperties": MAX_TAGS, "additionalProperties": {"type": "string"}, "x-kubernetes-validations": restricted_tag_rules},
                "userData": s("User data merged with what Karpenter generates for the family."),
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "x-kubernetes-validations": [
        {"message": "must specify exactly one of ['role', 'instanceProfile']",
         "rule": "(has(self.spec.role) && !has(self.spec.instanceProfile)) || (!has(self.spec.role) && has(self.spec.instanceProfile))"},
        {"message": "must specify amiFamily if amiSelectorTerms does not contain an alias",
         "rule": "self.spec.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.spec.amiFamily)"},
        *[{**r, "rule": r["rule"].replace("self.", "self.spec.")} for r in family_rules],
    ],
}
ec2nc_cols = [
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Role", "type": "string", "jsonPath": ".spec.role", "priority": 1},
]


# ---- DisruptionPolicy (nodeflow.dev/v1alpha1) -------------------------------------------------------------
def policy_duration(desc):
    return s(desc, pattern=pf.POLICY_DURATION_PATTERN,
             **{"x-kubernetes-validations": [{"message": "must be longer than 0s", "rule": "duration(self) > duration('0s')"}]})


def url(desc):
    return s(desc, pattern=r"^https?://[^/\s]+")


def money(desc):
    return s(desc, pattern=pf.DECIMAL_PATTERN)


def percent(desc):
    # maxLength bounds the regex's cost for kube-apiserver's CEL/schema estimator
    return s(desc, pattern=pf.PERCENT_PATTERN, maxLength=pf.PERCENT_MAX_LENGTH)


def obj(desc, props, required=None, rules=None):
    out = {"description": desc, "type": "object", "properties": props}
    if required:
        out["required"] = required
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


label_selector = obj(
    "NodePools by their metadata.labels (a metav1.LabelSelector); {} selects every NodePool.",
    {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {
            "type": "array",
            "items": obj("", {"key": s(), "operator": s(enum=list(dp.SELECTOR_OPERATORS)),
                              "values": {"type": "array", "items": s()}}, required=["key", "operator"]),
        },
    },
)
wave = {
    "description": "A cumulative target: a node count >= 1 or a percentage (1%-100%) of the pool's drifted nodes.",
    "x-kubernetes-int-or-string": True,
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    # "100%" is the longest percentage the rule allows; without a bound kube-apiserver prices the regex over a 3 MiB
    # string and refuses the CRD (simulator/cel_cost.py checks every rule).
    "maxLength": dp.WAVE_MAX_LENGTH,
    "x-kubernetes-validations": [{"message": "a wave is a count >= 1 or a percentage 1%-100%",
                                  "rule": f"type(self) == int ? self >= 1 : self.matches('{dp.WAVE_PERCENT_PATTERN}')"}],
}
disruptionpolicy_schema = {
    "description": "DisruptionPolicy: disruption controls for the NodePools it selects (nodeflow; see docs/semantics.md).",
    "type": "object",
    "properties": {
        **OBJECT_META,
        "spec": obj("", {
            "nodePools": {"description": "NodePools by name.", "type": "array", "minItems": 1,
                          "items": s(maxLength=63)},
            "nodePoolSelector": label_selector,
            "expiration": obj("Soft-then-hard expiry.", {
                "gracefulExpireAfter": policy_duration("From this age on a node is replaced like drift (reason Expiring); shorter than the NodePool's expireAfter."),
                "jitter": percent("Each node expires earlier by up to this share of its expiry, fixed per node."),
            }),
            "drift": obj("Drift rolled out in waves.", {
                "waves": {"type": "array", "minItems": 1, "maxItems": 20, "items": wave},
                "bakeTime": policy_duration("Wait between two waves."),
                "maxFailedReplacements": {"type": "integer", "minimum": 0},
                "healthTimeout": policy_duration("How long the displaced pods have to be Running and Ready."),
            }),
            "hooks": obj("HTTP hooks.", {
                "preDisruption": obj("Called before a node is tainted.", {
                    "url": url("The endpoint."),
                    "ack": s("Required: wait for a 2xx answer or an approval.", enum=[m.value for m in dp.AckMode]),
                    "ackTimeout": policy_duration("How long to wait for the ack."),
                    "onTimeout": s("What a missing ack does at ackTimeout.", enum=[m.value for m in dp.OnTimeout]),
                }, required=["url"]),
                "notify": obj("Post-event notifications.", {"url": url("The endpoint.")}, required=["url"]),
            }),
            "escalation": obj("Graceful disruptions blocked by PDBs or do-not-disrupt.", {
                "notifyAfter": policy_duration("Notify and record an Event after this long."),
                "forceAfter": policy_duration("Force the drain after this long."),
            }, rules=[{"message": "forceAfter must be longer than notifyAfter",
                       "rule": "!has(self.notifyAfter) || !has(self.forceAfter) || duration(self.forceAfter) > duration(self.notifyAfter)"}]),
            "consolidation": obj("Consolidate only when the savings justify the evictions.", {
                "minSavingsPerHour": money("US dollars per hour, a decimal string."),
                "minSavingsPercent": {"type": "number", "minimum": 0, "maximum": 100},
                "perPodDisruptionCost": money("US dollars per hour added to the threshold per evicted pod."),
            }),
            "calendar": obj("When voluntary disruption may start.", {
                "timeZone": s("IANA time zone of the dates and schedules (default UTC)."),
                "exclusions": {"type": "array", "maxItems": 100, "items": obj(
                    "Whole days, both ends inclusive.", {"from": s(format="date"), "to": s(format="date")},
                    required=["from"], rules=[{"message": "'to' must not be before 'from'",
                                                "rule": "!has(self.to) || self.to >= self.from"}])},
                "allowWindows": {"type": "array", "maxItems": 50, "items": obj(
                    "Opens at each hit of schedule, lasts duration.",
                    {"schedule": s(pattern=SCHEDULE_PATTERN), "duration": policy_duration("How long the window lasts.")},
                    required=["schedule", "duration"])},
            }),
            "drain": obj("What a voluntary disruption's drain does with pods that run to completion.", {
                "jobs": s("Wait: Job pods (and pods annotated nodeflow.dev/wait-for-completion) run to completion.",
                          enum=[m.value for m in pc.JobsDrain]),
                "maxWait": policy_duration("The longest a drain waits for them (the terminationGracePeriod deadline still applies)."),
            }),
            "spot": obj("Spot fallback and return.", {
                "returnAfter": policy_duration("On-demand nodes launched because spot was unavailable go back to spot after this long."),
                "maxOnDemandFraction": percent("The largest share of the pool's nodes that may fall back to on-demand."),
            }),
            "provisioning": obj("Launch controls.", {
                "zoneBalance": {"description": "The largest node-count difference between the pool's zones.",
                                "type": "integer", "minimum": 1},
                "deprecated": {"description": "No new launches; the pool's nodes go as they empty or expire.",
                               "type": "boolean"},
            }),
            "limits": obj("Cost limits.", {
                "costPerHour": money("US dollars per hour for all the pools the policy selects, a decimal string."),
            }),
            "repair": obj("Node repair for the pools the policy selects; unset fields keep the worker's settings.", {
                "enabled": {"description": "false: no node of these pools is repaired (the worker's repair stays on for others).",
                            "type": "boolean"},
                "toleration": policy_duration("How long a repair condition is tolerated before the node is repaired."),
                "zoneOutagePercent": {"description": "Repairs in a zone hold back when more than this share of its nodes is unhealthy.",
                                      "type": "integer", "minimum": pc.ZONE_OUTAGE_PERCENT_RANGE[0],
                                      "maximum": pc.ZONE_OUTAGE_PERCENT_RANGE[1]},
            }),
        }, rules=[{"message": "exactly one of 'nodePools' and 'nodePoolSelector' must be set",
                   "rule": "has(self.nodePools) != has(self.nodePoolSelector)"}]),
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "required": ["spec"],
}
dp_cols = [
    {"name": "NodePools", "type": "string", "jsonPath": ".spec.nodePools"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


# ---- NodeOverlay (karpenter.sh/v1alpha1; Karpenter's own CRD, kubernetes-sigs/karpenter nodeoverlay.go) ----------
overlay_requirement_rules = [
    {"message": "requirements with operator 'NotIn' must have a value defined",
     "rule": "self.all(x, x.operator == 'NotIn' ? has(x.values) && x.values.size() != 0 : true)"},
    {"message": "requirements with operator 'In' must have a value defined",
     "rule": "self.all(x, x.operator == 'In' ? has(x.values) && x.values.size() != 0 : true)"},
    {"message": "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",
     "rule": "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)"},
]
nodeoverlay_schema = {
    "description": "NodeOverlay: price, price adjustment and extended capacity for the instance types and offerings its requirements select (Karpenter v1alpha1; docs/semantics.md).",
    "type": "object",
    "properties": {
        **OBJECT_META,
        "spec": {
            "type": "object",
            "required": ["requirements"],
            "properties": {
                "requirements": {
                    "description": "Which instance types and offerings the overlay applies to, by their labels.",
                    "type": "array",
                    "maxItems": no.MAX_REQUIREMENTS,
                    "x-kubernetes-list-type": "atomic",
                    "items": {
                        "type": "object",
                        "required": ["key", "operator"],
                        "properties": {
                            "key": s("Label key.", maxLength=316, pattern=QUALIFIED_NAME_PATTERN, **{"x-kubernetes-validations": [
                                {"message": 'label domain "karpenter.sh" is restricted',
                                 "rule": f'self in ["{labels.CAPACITY_TYPE_LABEL}", "{labels.NODEPOOL_LABEL}"] || !self.find("^([^/]+)").endsWith("karpenter.sh")'},
                                {"message": f'label "{labels.HOSTNAME_LABEL}" is restricted', "rule": f'self != "{labels.HOSTNAME_LABEL}"'},
                            ]}),
                            "operator": s("How the key relates to the values.", enum=list(no.OPERATORS)),
                            "values": {"type": "array", "maxItems": 1000, "x-kubernetes-list-type": "atomic",
                                       "items": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN}},
                        },
                    },
                    "x-kubernetes-validations": overlay_requirement_rules,
                },
                "price": s("US dollars per hour replacing the offering's price.", pattern=no.PRICE_PATTERN),
                "priceAdjustment": s("A signed change of the price: an amount (+0.1, -0.05) or a percentage (+10%, -15%).",
                                     pattern=no.PRICE_ADJUSTMENT_PATTERN),
                "capacity": {
                    "description": "Extended resources added to the node's capacity (never cpu, memory, ephemeral-storage or pods).",
                    "type": "object",
                    "maxProperties": 100,
                    "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
                                             "x-kubernetes-int-or-string": True},
                    "x-kubernetes-validations": [{"message": no.RESTRICTED_CAPACITY_MESSAGE,
                                                  "rule": "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"}],
                },
                "weight": {"description": "Priority among overlays: higher wins; unset is 0.", "type": "integer",
                           "format": "int32", "minimum": no.WEIGHT_RANGE[0], "maximum": no.WEIGHT_RANGE[1]},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "required": ["spec"],
    "x-kubernetes-validations": [{"message": no.BOTH_PRICES_MESSAGE,
                                  "rule": "!has(self.spec.price) || !has(self.spec.priceAdjustment)"}],
}
no_cols = [
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Weight", "type": "integer", "jsonPath": ".spec.weight", "priority": 1},
]


# CapacityBuffer (api/capacity_buffer.py): the Cluster Autoscaler's v1beta1 API as Karpenter v1.14 serves it
# (pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml): fields, minimums, the default strategy and two CEL rules.
def _cb_ref(desc):
    return {"description": desc, "type": "object", "required": ["name"],
            "properties": {"name": s("name of the referent.", minLength=1)}}


_CB_CONDITION = {
    "type": "object",
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    "properties": {
        "lastTransitionTime": s(format="date-time"),
        "message": s(maxLength=32768),
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "reason": s(maxLength=1024, minLength=1, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        "status": s(enum=["True", "False", "Unknown"]),
        "type": s(maxLength=316, pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"),
    },
}
capacitybuffer_schema = {
    "description": "CapacityBuffer keeps spare capacity in the cluster as virtual (placeholder) pods.",
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": s(),
        "kind": s(),
        "metadata": {"type": "object"},
        "spec": {
            "description": "spec defines the desired characteristics of the buffer.",
            "type": "object",
            "properties": {
                "limits": {"description": "Resource totals that cap the number of chunks.", "type": "object",
                           "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                                    "pattern": QUANTITY_PATTERN, "x-kubernetes-int-or-string": True}},
                "percentage": {"description": "Chunks as a percentage of the scalableRef's replicas (rounded up, at least 1).",
                               "type": "integer", "format": "int32", "minimum": 0},
                "podTemplateRef": _cb_ref("A PodTemplate in the same namespace: the shape of one chunk."),
                "provisioningStrategy": s("How the buffer is used.", default=cb.ACTIVE_CAPACITY),
                "replicas": {"description": "The desired number of chunks.", "type": "integer", "format": "int32",
                             "minimum": 0},
                "scalableRef": {
                    "description": "An object with a scale subresource whose pod template is one chunk's shape.",
                    "type": "object", "required": ["kind", "name"],
                    "properties": {"apiGroup": s("API group of the referent; empty for the core group."),
                                   "kind": s("kind of the referent.", minLength=1),
                                   "name": s("name of the referent.", minLength=1)},
                },
            },
            "x-kubernetes-validations": [
                {"message": cb.PODTEMPLATE_NEEDS_COUNT_MESSAGE,
                 "rule": "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)"},
                {"message": cb.ONE_REF_MESSAGE, "rule": "!(has(self.podTemplateRef) && has(self.scalableRef))"},
            ],
        },
        "status": {
            "description": "The observed state of the buffer.",
            "type": "object",
            "properties": {
                "conditions": {"type": "array", "items": _CB_CONDITION, "x-kubernetes-list-map-keys": ["type"],
                               "x-kubernetes-list-type": "map"},
                "podTemplateGeneration": {"type": "integer", "format": "int64"},
                "podTemplateRef": _cb_ref("The PodTemplate the buffer was resolved from."),
                "provisioningStrategy": s(),
                "replicas": {"description": "The number of chunks kept.", "type": "integer", "format": "int32"},
            },
        },
    },
}
cb_cols = [
    {"name": "Strategy", "type": "string", "jsonPath": ".spec.provisioningStrategy", "description": "The strategy to be used."},
    {"name": "PodTemplate", "type": "string", "jsonPath": ".status.podTemplateRef.name", "description": "The name of the PodTemplate used."},
    {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "description": "The actual number of buffer chunks."},
    {"name": "ConditionsType", "type": "string", "jsonPath": ".status.conditions[*].type", "description": "List of all condition types."},
    {"name": "ConditionsStatus", "type": "string", "jsonPath": ".status.conditions[*].status", "description": "List of all condition statuses."},
    {"name": "ConditionsReason", "type": "string", "jsonPath": ".status.conditions[*].reason", "description": "List of all condition reasons."},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "The age of the CapacityBuffer."},
]


def render() -> dict[str, str]:
    """File name -> YAML text of each CRD."""

    def dump(doc: dict) -> str:
        return HEADER + yaml.safe_dump(doc, sort_keys=False, width=200)

    return {
        "karpenter.sh_nodepools.yaml": dump(crd("nodepools", "NodePool", ["np"], nodepool_schema, np_cols)),
        "karpenter.sh_nodeclaims.yaml": dump(crd("nodeclaims", "NodeClaim", ["nc"], nodeclaim_schema, nc_cols)),
        f"{EC2_GROUP}_ec2nodeclasses.yaml": dump(
            crd("ec2nodeclasses", "EC2NodeClass", ["ec2nc", "ec2ncs"], ec2nodeclass_schema, ec2nc_cols, group=EC2_GROUP)
        ),
        f"{dp.GROUP}_{dp.PLURAL}.yaml": dump(
            crd(dp.PLURAL, dp.KIND, ["dp"], disruptionpolicy_schema, dp_cols, group=dp.GROUP, version=dp.VERSION,
                categories=("nodeflow",))
        ),
        f"{no.GROUP}_{no.PLURAL}.yaml": dump(
            crd(no.PLURAL, no.KIND, ["overlays"], nodeoverlay_schema, no_cols, group=no.GROUP, version=no.VERSION)
        ),
        f"{cb.GROUP}_{cb.PLURAL}.yaml": dump(
            crd(cb.PLURAL, cb.KIND, ["cb"], capacitybuffer_schema, cb_cols, group=cb.GROUP, version=cb.VERSION,
                categories=("autoscaling",), scope="Namespaced")
        ),
    }


def main() -> None:
    for name, text in render().items():
        (CRD_DIR / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
