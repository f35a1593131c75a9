"""The kubernetes client package, imported lean: only the API classes and models a process uses.

`import kubernetes` (which any `from kubernetes...` runs first) imports the whole client: 67 API classes, 769
models, and the dynamic, stream, utils, leaderelection and informer packages, about 55 MB of resident memory, of
which the worker uses a handful of API classes and models (docs/decisions.md §27). `install()` puts lazy stand-ins
for the `kubernetes`, `kubernetes.client`, `kubernetes.client.api` and `kubernetes.client.models` packages in
`sys.modules`: a name is imported, on first use, from the module the package's own `__init__.py` imports it from, so
`from kubernetes.client import X`, `k8s.X` and the ApiClient's deserialization (a getattr on
`kubernetes.client.models`) resolve to the same objects as before. Submodules import as they always do.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any

# the packages whose __init__ imports everything, and the folder of each below the `kubernetes` package's
PACKAGES = {"kubernetes": "", "kubernetes.client": "client", "kubernetes.client.api": "client/api",
            "kubernetes.client.models": "client/models"}
_FROM_IMPORT = re.compile(r"^from (kubernetes\.[\w.]+) import (\w+)\s*$", re.MULTILINE)
_VERSION = re.compile(r'^__version__ = "([^"]+)"', re.MULTILINE)


class LazyPackage(types.ModuleType):
    """A package whose names are imported when first read: `names` maps each to the module that defines it; any
    other name is tried as a submodule (`kubernetes.config`), as an attribute of an imported package would be."""

    def __init__(self, name: str, path: Path, names: dict[str, str], version: str | None) -> None:
        super().__init__(name)
        self.__path__ = [str(path)]
        self.__package__ = name
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        self.__spec__.submodule_search_locations = [str(path)]
        self.__dict__["_lazy_names"] = names
        if version is not None:
            self.__version__ = version

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__["_lazy_names"].get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif self._has_submodule(name):
            value = importlib.import_module(f"{self.__name__}.{name}")
        else:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        setattr(self, name, value)
        return value

    def _has_submodule(self, name: str) -> bool:
        if name.startswith("_"):
            return False
        folder = Path(self.__path__[0])
        return (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()


def _package(name: str, path: Path) -> LazyPackage | None:
    """The stand-in for one package, from its own __init__.py; None when that file does not read as expected."""
    try:
        text = (path / "__init__.py").read_text()
    except OSError:
        return None
    names = {attr: module for module, attr in _FROM_IMPORT.findall(text)}
    version = _VERSION.search(text)
    if name != "kubernetes" and not names:
        return None
    return LazyPackage(name, path, names, version.group(1) if version else None)


def install() -> bool:
    """Put the lazy packages in place, unless the kubernetes package is imported already (then nothing changes) or
    its layout is not the one read here (then it imports whole, as before). True when in place."""
    if any(name in sys.modules for name in PACKAGES):
        return False
    spec = importlib.util.find_spec("kubernetes")  # finds the top-level package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return False
    root = Path(next(iter(spec.submodule_search_locations)))
    packages = {name: _package(name, root / sub if sub else root) for name, sub in PACKAGES.items()}
    if any(p is None for p in packages.values()):
        return False
    for name, package in packages.items():
        sys.modules[name] = package  # type: ignore[assignment]
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(packages[parent], child, package)
    return True
