"""The Kubernetes versions nodeflow supports, and the one-line answer when an API server is older.

The CRDs in deploy/crds/ validate with CEL (`x-kubernetes-validations`): the Kubernetes regex library's `find()`,
the strings extension's `split()`, `duration()`, and transition rules on `oldSelf` (a NodeClaim's immutable spec,
a NodePool that may not switch between static and dynamic). Those rules are on by default from Kubernetes 1.25
(the CustomResourceValidationExpressions feature, beta there, GA in 1.29); an older API server refuses the CRDs or
ignores their rules. None of them needs a later feature (no `messageExpression`, `reason`/`fieldPath`,
`optionalOldSelf`, quantity or format library), so 1.25 is the minimum (docs/operations.md, README).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MIN_KUBERNETES = (1, 25)
WHY = "its CRDs validate with CEL rules (find(), transition rules on oldSelf), on by default from 1.25"
_GIT_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def server_version(info: Mapping[str, Any]) -> tuple[int, int] | None:
    """(major, minor) of a /version answer: from gitVersion ("v1.28.3-eks-1"), else major/minor ("1", "28+",
    as managed clusters write them); None when neither reads as a version."""
    match = _GIT_VERSION.match(str(info.get("gitVersion") or info.get("git_version") or ""))
    if match:
        return int(match.group(1)), int(match.group(2))
    major = re.match(r"\d+", str(info.get("major") or ""))
    minor = re.match(r"\d+", str(info.get("minor") or ""))
    if major and minor:
        return int(major.group()), int(minor.group())
    return None


def too_old(info: Mapping[str, Any], server: str = "the API server") -> str | None:
    """One line naming the version needed and the version found when `info` (a /version answer) is older than
    MIN_KUBERNETES; None when it is new enough or does not say (a server that hides its version is not refused)."""
    found = server_version(info)
    if found is None or found >= MIN_KUBERNETES:
        return None
    shown = str(info.get("gitVersion") or info.get("git_version") or f"{found[0]}.{found[1]}")
    need = f"{MIN_KUBERNETES[0]}.{MIN_KUBERNETES[1]}"
    return f"nodeflow needs Kubernetes {need} or newer ({WHY}); {server} is {shown}"
