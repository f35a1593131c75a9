"""The stand-in answers moto's per-request lookups once (devstack/moto_dispatch.py): the same answers as moto's own,
computed once per process, and a second install keeps one wrapping."""

from __future__ import annotations

import moto.backends
import moto.core.responses
from moto.ec2.responses import EC2Response

from devstack import moto_dispatch


def _originals() -> tuple[object, object]:
    return (getattr(moto.backends.list_of_moto_modules, moto_dispatch._MARK, moto.backends.list_of_moto_modules),
            getattr(moto.core.responses.method_names_from_class, moto_dispatch._MARK,
                    moto.core.responses.method_names_from_class))


def test_the_answers_are_motos_own() -> None:
    listing, names = _originals()
    moto_dispatch.install()
    assert list(moto.backends.list_of_moto_modules()) == list(listing())  # type: ignore[operator]
    assert "ec2" in moto.backends.list_of_moto_modules()
    assert moto.core.responses.method_names_from_class(EC2Response) == names(EC2Response)  # type: ignore[operator]
    assert "describe_instance_status" in moto.core.responses.method_names_from_class(EC2Response)


def test_each_lookup_runs_once() -> None:
    calls: list[object] = []

    def listing() -> list[str]:
        calls.append("listing")
        return ["ec2", "sqs"]

    def names(clazz: object) -> list[str]:
        calls.append(clazz)
        return ["a", "b"]

    once_listing, once_names = moto_dispatch._once_listing(listing), moto_dispatch._once_per_class(names)
    for _ in range(3):
        assert once_listing() == ("ec2", "sqs")
        assert once_names(int) == ["a", "b"] and once_names(str) == ["a", "b"]
    assert calls == ["listing", int, str]


def test_a_second_install_keeps_one_wrapping() -> None:
    moto_dispatch.install()
    first = _originals()
    moto_dispatch.install()
    assert _originals() == first
    assert getattr(_originals()[0], moto_dispatch._MARK, None) is None  # the original is moto's, not a wrapper
