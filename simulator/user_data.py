"""What a node's bootstrap reads from its EC2 user data: which cluster to join, the kubelet's labels, taints and
kubelet configuration. The simulator's own reading (never nodeflow's builder in api/nodeclass_launch.py), so a
field the launch forgets to send is missing on the Node, as on a real node.

Three formats, as the EKS AMIs accept them (docs/architecture.md, "Simulated kubelets and CCM"):
- AL2023 `nodeadm`: a `NodeConfig` YAML document, alone or as `application/node.eks.aws` MIME parts; several
  are merged in order (flags appended, kubelet config keys overlaid);
- AL2: a shell script calling `/etc/eks/bootstrap.sh <cluster> --apiserver-endpoint URL
  --kubelet-extra-args '...'` (plain or in a `text/x-shellscript` MIME part);
- Bottlerocket: TOML `[settings.kubernetes]` (cluster-name, api-server, max-pods, node-labels, node-taints,
  kube-reserved, system-reserved, eviction-hard).
"""

from __future__ import annotations

import base64
import binascii
import enum
import shlex
import tomllib
from email import message_from_string
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field


class Flavor(enum.StrEnum):
    NODEADM = "nodeadm"
    BOOTSTRAP_SH = "bootstrap.sh"
    BOTTLEROCKET = "bottlerocket"


class Bootstrap(BaseModel):
    """A node's bootstrap as read from its user data. `kubelet` holds KubeletConfiguration keys (camelCase)."""

    model_config = ConfigDict(frozen=True)

    flavor: Flavor
    cluster_name: str = ""
    api_server: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, str]] = Field(default_factory=list)
    kubelet: dict[str, Any] = Field(default_factory=dict)


def decode(raw: str | bytes | None) -> str:
    """User data as DescribeInstanceAttribute returns it (base64) to text; plain text passes through."""
    if not raw:
        return ""
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        return base64.b64decode(data, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return data.decode("utf-8", errors="replace")


def parse(text: str) -> Bootstrap | None:
    """The bootstrap in `text`, or None when it holds none a node would act on (then the node never joins)."""
    if not text.strip():
        return None
    if text.lstrip().startswith("MIME-Version") or text.lstrip().startswith("Content-Type"):
        return _from_parts(_mime_parts(text))
    if "[settings" in text:
        return _bottlerocket(text)
    if "kind: NodeConfig" in text:
        return _from_parts([("application/node.eks.aws", text)])
    return _from_parts([("text/x-shellscript", text)])


def _mime_parts(text: str) -> list[tuple[str, str]]:
    msg = message_from_string(text)
    return [(p.get_content_type(), str(p.get_payload())) for p in msg.walk() if not p.is_multipart()]


def _from_parts(parts: list[tuple[str, str]]) -> Bootstrap | None:
    configs = [doc for ctype, body in parts if ctype == "application/node.eks.aws" for doc in _node_configs(body)]
    if configs:
        return _nodeadm(configs)
    for ctype, body in parts:
        if ctype.startswith("text/x-shellscript"):
            found = _bootstrap_sh(body)
            if found is not None:
                return found
    return None


def _node_configs(body: str) -> list[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(body))
    except yaml.YAMLError:
        return []
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == "NodeConfig"]


def _nodeadm(configs: list[dict[str, Any]]) -> Bootstrap:
    """nodeadm merges every NodeConfig in order (later scalars win, kubelet flags add up)."""
    name = endpoint = ""
    flags: list[str] = []
    kubelet: dict[str, Any] = {}
    for cfg in configs:
        spec = cfg.get("spec") or {}
        cluster = spec.get("cluster") or {}
        name = str(cluster.get("name") or name)
        endpoint = str(cluster.get("apiServerEndpoint") or endpoint)
        kube = spec.get("kubelet") or {}
        flags += [str(f) for f in kube.get("flags") or []]
        kubelet = overlay(kubelet, kube.get("config") or {})
    labels, taints, flag_config = _kubelet_flags(flags)
    taints = [*_config_taints(kubelet.get("registerWithTaints")), *taints]
    return Bootstrap(flavor=Flavor.NODEADM, cluster_name=name, api_server=endpoint, labels=labels, taints=taints,
                     kubelet=overlay(kubelet, flag_config))


def overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top`'s keys over `base`'s; maps (kubeReserved, evictionHard, ...) merge key by key, as the kubelet merges a
    drop-in config into its base config."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _bootstrap_sh(script: str) -> Bootstrap | None:
    """The first `/etc/eks/bootstrap.sh` call in the script (AL2)."""
    for line in script.splitlines():
        if "/etc/eks/bootstrap.sh" not in line:
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            return None
        at = next((i for i, w in enumerate(words) if w.endswith("/etc/eks/bootstrap.sh")), None)
        if at is None:
            continue
        args = words[at + 1:]
        cluster, options = (args[0], args[1:]) if args and not args[0].startswith("--") else ("", args)
        opts = _options(options)
        labels, taints, kubelet = _kubelet_flags(shlex.split(opts.get("--kubelet-extra-args", "")))
        if opts.get("--use-max-pods") == "false" and "maxPods" not in kubelet:
            kubelet["maxPods"] = 110  # the kubelet's own default: bootstrap.sh then writes no maxPods
        return Bootstrap(flavor=Flavor.BOOTSTRAP_SH, cluster_name=cluster,
                         api_server=opts.get("--apiserver-endpoint", ""), labels=labels, taints=taints,
                         kubelet=kubelet)
    return None


def _options(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            out[key] = value
        elif word.startswith("--") and i + 1 < len(words):
            out[word] = words[i + 1]
            i += 1
        i += 1
    return out


def _kubelet_flags(flags: list[str]) -> tuple[dict[str, str], list[dict[str, str]], dict[str, Any]]:
    """--node-labels, --register-with-taints and --max-pods from kubelet command-line flags."""
    opts = _options(flags)
    labels = dict(_pair(item) for item in _items(opts.get("--node-labels", "")))
    taints = [parse_taint(item) for item in _items(opts.get("--register-with-taints", ""))]
    kubelet: dict[str, Any] = {}
    if opts.get("--max-pods", "").isdigit():
        kubelet["maxPods"] = int(opts["--max-pods"])
    return labels, taints, kubelet


def _items(flag: str) -> list[str]:
    return [item.strip() for item in flag.split(",") if item.strip()]


def _pair(item: str) -> tuple[str, str]:
    key, _, value = item.partition("=")
    return key, value


def parse_taint(item: str) -> dict[str, str]:
    """`key=value:Effect` or `key:Effect`, the kubelet's --register-with-taints form."""
    spec, _, effect = item.rpartition(":")
    key, _, value = spec.partition("=")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def _config_taints(taints: Any) -> list[dict[str, str]]:
    """KubeletConfiguration.registerWithTaints (what Karpenter itself writes for AL2023)."""
    return [{k: str(v) for k, v in t.items() if k in ("key", "value", "effect") and v}
            for t in taints or [] if isinstance(t, dict) and t.get("key")]


def _bottlerocket(text: str) -> Bootstrap | None:
    try:
        settings = tomllib.loads(text).get("settings") or {}
    except tomllib.TOMLDecodeError:
        return None
    k8s = settings.get("kubernetes") or {}
    if not k8s:
        return None
    taints = []
    for key, values in (k8s.get("node-taints") or {}).items():
        for value_effect in values if isinstance(values, list) else [values]:
            value, _, effect = str(value_effect).rpartition(":")
            taints.append({"key": key, "effect": effect, **({"value": value} if value else {})})
    kubelet: dict[str, Any] = {}
    for toml_key, config_key in (("max-pods", "maxPods"), ("kube-reserved", "kubeReserved"),
                                 ("system-reserved", "systemReserved"), ("eviction-hard", "evictionHard")):
        if toml_key in k8s:
            kubelet[config_key] = k8s[toml_key]
    return Bootstrap(flavor=Flavor.BOTTLEROCKET, cluster_name=str(k8s.get("cluster-name", "")),
                     api_server=str(k8s.get("api-server", "")),
                     labels={str(k): str(v) for k, v in (k8s.get("node-labels") or {}).items()}, taints=taints,
                     kubelet=kubelet)
