"""deploy/build-image.sh and deploy/Dockerfile, checked without building anything (a build takes minutes and
needs podman and mmdebstrap): the script parses, and the image stays non-root with no shell needed to start it.
The image's Python path is rebuilt from what the Dockerfile copies and pyproject installs (a second or so): it
holds no simulator module, the worker loads none, and `nodeflow demo` there says how to get them.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

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


# The simulated world (pyproject's [sim] extra): the worker image holds none of it.
SIM_WORLD = {"simulator", "devstack", "bench", "celpy", "moto"}


def _build_context_sources() -> list[str]:
    """What the build stage COPYs from the repository (every source of every COPY without --from)."""
    steps = instructions(DOCKERFILE.read_text())
    build = steps[:len(steps) - len(final_stage(steps))]
    sources: list[str] = []
    for op, arg in build:
        words = arg.split()
        if op in {"COPY", "ADD"} and not any(w.startswith("--from") for w in words):
            sources += [w.rstrip("/") for w in words[:-1] if not w.startswith("--")]
    return sources


def _installed_top_level(tree: Path) -> set[str]:
    """The top-level names `pip install .` puts in the image from `tree`: pyproject's py-modules and the
    directories its packages.find include patterns match (namespace packages count, as setuptools finds them)."""
    config = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = config["packages"]["find"]["include"]
    dirs = {d.name for d in tree.iterdir() if d.is_dir() and any(fnmatch.fnmatch(d.name, p) for p in patterns)}
    return dirs | set(config.get("py-modules", []))


@pytest.fixture
def image_site(tmp_path: Path) -> Path:
    """What the image's virtualenv gets of ours: the build context's installed names, linked into a directory."""
    context, site = tmp_path / "context", tmp_path / "site"
    context.mkdir()
    site.mkdir()
    for source in _build_context_sources():
        (context / source).symlink_to(ROOT / source)
    for name in _installed_top_level(context):
        file = f"{name}.py" if (context / f"{name}.py").is_file() else name
        (site / file).symlink_to(ROOT / file)
    return site


def _python_in_image(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -c code` with the image's sys.path: our installed names and the third-party libraries, -S so the
    checkout's editable install (a .pth finder that maps every package here) is not loaded, cwd outside it."""
    libraries = sysconfig.get_paths()["purelib"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": f"{site}{os.pathsep}{libraries}"}
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120, check=False)


def test_the_image_installs_no_simulator_module(image_site: Path) -> None:
    sources = _build_context_sources()
    assert {"worker.py", "api", "starter"} <= set(sources), sources
    assert not SIM_WORLD & {Path(s).parts[0] for s in sources}, sources
    installed = {p.name.removesuffix(".py") for p in image_site.iterdir()}
    assert "worker" in installed and not SIM_WORLD & installed, installed


def _smoke_check() -> str:
    """The Python the build script's smoke run gives the image: it prints the simulated world it finds."""
    match = re.search(r"^SIM_WORLD_CHECK='(.*?)'$", SCRIPT.read_text(), re.S | re.M)
    assert match is not None, "deploy/build-image.sh lost its SIM_WORLD_CHECK"
    return match.group(1)


def test_the_worker_loads_no_simulator_module_in_the_image(image_site: Path, tmp_path: Path) -> None:
    proc = _python_in_image(image_site, _smoke_check(), tmp_path)
    assert proc.returncode == 0, proc.stderr  # `import worker` worked with only what the image installs
    found = set(proc.stdout.split())
    # the image has neither library of the extra; this rebuilt path borrows the checkout's .venv, which has both
    assert found <= {"celpy", "moto"}, found


def test_the_smoke_check_sees_a_simulator_module(image_site: Path, tmp_path: Path) -> None:
    """The same check on a path that does hold the simulator: else an empty answer proves nothing."""
    if not (image_site / "simulator").exists():
        (image_site / "simulator").symlink_to(ROOT / "simulator")
    proc = _python_in_image(image_site, _smoke_check(), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "simulator" in proc.stdout.split()


def test_nodeflow_demo_in_the_image_says_how_to_get_the_simulator(image_site: Path, tmp_path: Path) -> None:
    # an unknown region too: were the extra's check to come after the region's, nothing would start either
    argv = ["demo", "--headless", "--region", "nowhere-1"]
    proc = _python_in_image(image_site, f"from starter.cli import main; main({argv!r})", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: nodeflow demo needs the [sim] extra") and proc.stderr.count("\n") == 1
    assert "nodeflow[sim]" in proc.stderr and "Traceback" not in proc.stderr
