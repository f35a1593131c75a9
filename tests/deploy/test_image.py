"""deploy/build-image.sh and deploy/Dockerfile, checked without building anything (a build takes minutes and
needs podman and mmdebstrap): the script parses, and the image stays non-root with no shell needed to start it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "build-image.sh"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
SHELLS = {"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/sh", "/usr/bin/bash"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile line, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(word.upper(), rest.strip()) for word, _, rest in (line.partition(" ") for line in lines)]


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def test_build_script_parses() -> None:
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_build_script_needs_no_docker_hub() -> None:
    text = SCRIPT.read_text()
    assert SCRIPT.stat().st_mode & 0o111, "deploy/build-image.sh must be executable"
    assert "set -euo pipefail" in text
    assert "--pull=never" in text, "the build must use the imported Debian bases, never pull from a registry"
    assert "mmdebstrap" in text and "podman import" in text


def test_build_script_names_the_missing_package(tmp_path: Path) -> None:
    """On a PATH with no podman the script stops before doing anything and says what to install."""
    for tool in ("bash", "dirname"):
        (tmp_path / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]
    result = subprocess.run([str(tmp_path / "bash"), str(SCRIPT)], capture_output=True, text=True, check=False,
                            env={"PATH": str(tmp_path)}, timeout=30)
    assert result.returncode != 0
    assert "podman not found: apt-get install podman" in result.stderr, result.stderr


def test_image_runs_non_root_without_a_shell() -> None:
    final = final_stage(instructions(DOCKERFILE.read_text()))
    users = [arg for op, arg in final if op == "USER"]
    assert users, "the runtime stage must set USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0 and (not gid or int(gid) != 0), users[-1]
    # the runtime base built by deploy/build-image.sh has no shell, so the stage cannot RUN anything
    assert not [arg for op, arg in final if op == "RUN"]
    entry = [arg for op, arg in final if op == "ENTRYPOINT"]
    assert entry, "the runtime stage must set ENTRYPOINT"
    argv = json.loads(entry[-1])  # exec form; shell form (`ENTRYPOINT python ...`) is not JSON and fails here
    assert isinstance(argv, list) and argv[0] not in SHELLS, argv
    assert not [arg for op, arg in final if op == "CMD" and not arg.startswith("[")], "CMD must be exec form"


def test_base_images_are_build_arguments_with_tagged_defaults() -> None:
    steps = instructions(DOCKERFILE.read_text())
    args = dict(arg.partition("=")[::2] for op, arg in steps if op == "ARG")
    for name in ("BUILD_IMAGE", "BASE_IMAGE"):
        assert ":" in args.get(name, ""), f"ARG {name} needs a tagged default"
    froms = [arg.split()[0] for op, arg in steps if op == "FROM"]
    assert froms == ["${BUILD_IMAGE}", "${BASE_IMAGE}"], froms
