"""YAML read safely and fast: libyaml's parser when PyYAML has it (about 8x the pure-Python one on the bundled
catalog, the CRDs and a snapshot), in the two flavours nodeflow reads.

`safe_load` is `yaml.safe_load`; `KubeLoader` keeps timestamps as strings, as the Kubernetes API sends them.
"""

from __future__ import annotations

from typing import IO, Any

import yaml

SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KubeLoader(SAFE_LOADER):  # type: ignore[valid-type, misc]
    """Safe YAML without implicit timestamps: Kubernetes keeps times as RFC 3339 strings."""


KubeLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in SAFE_LOADER.yaml_implicit_resolvers.items()
}


def safe_load(source: str | bytes | IO[str]) -> Any:
    """`yaml.safe_load`, with libyaml's parser when present."""
    return yaml.load(source, Loader=SAFE_LOADER)


def kube_load(source: str | bytes) -> Any:
    """One YAML document as the Kubernetes API server reads a request body: timestamps kept as strings."""
    return yaml.load(source, Loader=KubeLoader)


def kube_load_all(text: str) -> list[Any]:
    """Every document of a Kubernetes YAML stream, timestamps kept as strings."""
    return list(yaml.load_all(text, Loader=KubeLoader))
