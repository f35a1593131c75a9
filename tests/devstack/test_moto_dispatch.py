"""The stand-in answers moto's per-request lookups once (devstack/moto_dispatch.py): the same answers as moto's own,
computed once per process, and a second install keeps one wrapping.

moto is imported by the tests that use it, not at collection: `moto.ec2` costs 1.4 CPU-s, which every xdist worker
would pay to collect this module."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from devstack import moto_dispatch


@pytest.fixture
def moto() -> SimpleNamespace:
    """moto's two modules the stand-in wraps, and EC2's response class."""
    return SimpleNamespace(backends=importlib.import_module("moto.backends"),
                           responses=importlib.import_module("moto.core.responses"),
                           EC2Response=importlib.import_module("moto.ec2.responses").EC2Response)


def _originals(moto: SimpleNamespace) -> tuple[object, object]:
    return (getattr(moto.backends.list_of_moto_modules, moto_dispatch._MARK, moto.backends.list_of_moto_modules),
            getattr(moto.responses.method_names_from_class, moto_dispatch._MARK,
                    moto.responses.method_names_from_class))


def test_the_answers_are_motos_own(moto: SimpleNamespace) -> None:
    listing, names = _originals(moto)
    moto_dispatch.install()
    assert list(moto.backends.list_of_moto_modules()) == list(listing())  # type: ignore[operator]
    assert "ec2" in moto.backends.list_of_moto_modules()
    assert moto.responses.method_names_from_class(moto.EC2Response) == names(moto.EC2Response)  # type: ignore
    assert "describe_instance_status" in moto.responses.method_names_from_class(moto.EC2Response)


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


def test_a_second_install_keeps_one_wrapping(moto: SimpleNamespace) -> None:
    moto_dispatch.install()
    first = _originals(moto)
    moto_dispatch.install()
    assert _originals(moto) == first
    assert getattr(_originals(moto)[0], moto_dispatch._MARK, None) is None  # the original is moto's, not a wrapper
