"""The [sim] extra: `nodeflow demo` and `nodeflow sim` run in a simulated world the worker image leaves out.

simulator/ and devstack/ and their dependencies (cel-python, moto) come with `pip install 'nodeflow[sim]'`
(`make setup` in a checkout). Where they are missing, as in the worker image, the two commands stop with one
line that says so instead of an ImportError traceback from deep inside the command.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from starter.output import CliError

INSTALL_HINT = "pip install 'nodeflow[sim]' (in a checkout: make setup)"
# the top-level modules each command needs from the extra: the packages and the libraries only they use
SIM_MODULES: tuple[str, ...] = ("simulator", "celpy")
DEMO_MODULES: tuple[str, ...] = ("simulator", "devstack", "celpy", "moto")


def missing(modules: Iterable[str]) -> list[str]:
    """The modules of `modules` this interpreter cannot import, found without importing them."""
    return [name for name in modules if _spec_or_none(name) is None]


def _spec_or_none(name: str) -> object | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a module hidden with sys.modules[name] = None, or a broken one
        return None


def require(command: str, modules: Iterable[str]) -> None:
    """Stop `nodeflow <command>` with exit code 1 and the install hint when a module of the extra is absent."""
    absent = missing(modules)
    if absent:
        raise CliError(f"nodeflow {command} needs the [sim] extra, not installed here (no {', '.join(absent)}): "
                       f"{INSTALL_HINT}")
