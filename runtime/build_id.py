"""The build id a worker gives Temporal: which workflow code it runs, named without hashing every loaded module.

Left unset, the SDK hashes the bytecode of every module the process has loaded (some 2,100 in the worker: temporalio,
botocore, kubernetes, ours), 0.3-0.36 CPU-s of a 1.8 CPU-s start. What Temporal keeps the build id for (each
workflow task's completion, the reset points of a bad deployment) is the workflow code, which lives in `workflows/`
and the shapes it exchanges in `contracts/`; so the default names those sources, nodeflow's version and the SDK's:
`nodeflow-0.1.0+<12 hex>-temporalio-1.35.0`. Reading ~40 files takes about a millisecond. `--build-id`
(NODEFLOW_BUILD_ID) gives another, e.g. the image's digest.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

from temporalio.service import __version__ as SDK_VERSION

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workflows", "contracts")  # the workflow code and the inputs, results and signals it exchanges


def source_digest(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> str:
    """12 hex digits over every `.py` file of `packages` under `root`: its path and its bytes, in sorted order."""
    digest = hashlib.sha256()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _version() -> str:
    try:
        return metadata.version("nodeflow")
    except metadata.PackageNotFoundError:  # a checkout run without installing it
        return "unknown"


@functools.cache
def default_build_id(root: Path = ROOT) -> str:
    """nodeflow's version, the digest of its workflow sources and the SDK's version (once per process: the sources
    do not change under a running worker)."""
    return f"nodeflow-{_version()}+{source_digest(root)}-temporalio-{SDK_VERSION}"
