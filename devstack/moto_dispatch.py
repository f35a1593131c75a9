"""moto's per-request lookups, answered once per process: the same answers, without the work behind them.

moto (5.2) does two things on every request whose answers cannot change while its server runs:
- `DomainDispatcherApplication.get_backend_for_host` asks `moto.backends.list_of_moto_modules()`, which lists
  moto's package folder and stats each of its ~180 entries (twice a request: once for the path, once for the
  inferred host);
- `BaseResponse.call_action` asks `method_names_from_class(type(self))`, which walks every attribute of the
  response class with `inspect.getmembers` (EC2's has hundreds) to see whether the action is one of its methods.

Together they were ~3.5 of the ~7 CPU-ms a DescribeInstanceStatus of no instance costs the stand-in, and every
simulated world sends one four times a second (docs/benchmarks.md, Test suite). Both are kept here as moto computed
them, the first time they are asked. `install()` is idempotent; the stand-ins call it before moto serves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

_MARK = "__nodeflow_once__"


def _once_listing(original: Callable[[], Iterable[str]]) -> Callable[[], tuple[str, ...]]:
    """moto's module folders, listed at the first request: the package does not change under a running server."""
    listed: list[tuple[str, ...]] = []

    def list_of_moto_modules() -> tuple[str, ...]:
        if not listed:
            listed.append(tuple(original()))
        return listed[0]

    setattr(list_of_moto_modules, _MARK, original)
    return list_of_moto_modules


def _once_per_class(original: Callable[[object], list[str]]) -> Callable[[object], list[str]]:
    """A response class's method names, read once per class (classes are not changed after moto loads)."""
    cached = functools.cache(lambda clazz: tuple(original(clazz)))

    def method_names_from_class(clazz: object) -> list[str]:
        return list(cached(clazz))

    setattr(method_names_from_class, _MARK, original)
    return method_names_from_class


def install() -> None:
    """Answer both lookups once (idempotent: a second call keeps the first wrapping)."""
    import moto.backends
    import moto.core.responses

    def original(fn: Any) -> Any:
        return getattr(fn, _MARK, fn)

    moto.backends.list_of_moto_modules = _once_listing(original(moto.backends.list_of_moto_modules))
    moto.core.responses.method_names_from_class = _once_per_class(  # type: ignore[attr-defined]
        original(moto.core.responses.method_names_from_class))  # type: ignore[attr-defined]
