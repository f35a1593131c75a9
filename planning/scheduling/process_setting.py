"""A scheduling setting held once per process: the worker sets it from its flag at start, `nodeflow plan` and tests
for one block. The default topology spread, the minValues policy and the fill policy are such settings
(default_spread.py, min_values.py, fill_policy.py). Pure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Generic, TypeVar

T = TypeVar("T")
E = TypeVar("E", bound=StrEnum)


class ProcessSetting(Generic[T]):
    """One value for every simulation of the process."""

    def __init__(self, default: T) -> None:
        self.value = default

    def set(self, value: T) -> None:
        self.value = value

    def get(self) -> T:
        return self.value

    @contextmanager
    def using(self, value: T) -> Iterator[None]:
        """`value` inside the block, the previous one after it."""
        saved, self.value = self.value, value
        try:
            yield
        finally:
            self.value = saved


class ChoiceSetting(ProcessSetting[E]):
    """A setting that is one value of an enum (a flag's choices): it parses its own flag."""

    def parse(self, text: str) -> E:
        """The member named `text`; ValueError naming every value otherwise (a bad flag stops the worker)."""
        choices = type(self.value)
        try:
            return choices(text)
        except ValueError:
            names = [m.value for m in choices]
            raise ValueError(f"{text!r}: not {', '.join(names[:-1])} or {names[-1]}") from None
