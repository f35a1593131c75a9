"""The launch template book (planning/provisioning/launch_templates.py): Karpenter's one-minute cache of templates,
whose expiry deletes a template, plus nodeflow's rule that a template held by a launch in progress never expires."""

from __future__ import annotations

from planning.provisioning.launch_templates import TTL_SECONDS, TemplateBook


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_template_is_stale_a_minute_after_its_last_use_and_taken_once() -> None:
    clock = Clock()
    book = TemplateBook(clock)
    book.remember("a")
    clock.now = 30.0
    book.remember("b")
    clock.now = TTL_SECONDS - 0.001
    assert book.take_stale() == []
    clock.now = TTL_SECONDS
    assert book.take_stale() == ["a"]
    assert book.known() == ["b"] and book.take_stale() == []  # taken: the caller deletes it, nobody else does
    clock.now = 30.0 + TTL_SECONDS
    assert book.take_stale() == ["b"] and book.known() == []


def test_a_held_template_never_goes_and_its_minute_starts_at_the_release() -> None:
    clock = Clock()
    book = TemplateBook(clock)
    assert book.hold("a") is False  # unknown: the launch asks EC2 (and makes it)
    book.remember("a")
    assert book.hold("a") is True  # a second launch at once: known, no EC2 call
    clock.now = 10 * TTL_SECONDS
    assert book.take_stale() == [] and book.held() == ["a"]
    book.release(["a"])
    assert book.take_stale() == [] and book.held() == ["a"]  # one launch still holds it
    book.release(["a"])
    assert book.held() == [] and book.take_stale() == []  # released now: used now
    clock.now += TTL_SECONDS
    assert book.take_stale() == ["a"]


def test_use_extends_the_minute() -> None:
    clock = Clock()
    book = TemplateBook(clock)
    book.remember("a")
    for _ in range(5):
        clock.now += TTL_SECONDS / 2
        assert book.hold("a") is True
        book.release(["a"])
        assert book.take_stale() == []
    clock.now += TTL_SECONDS
    assert book.take_stale() == ["a"]


def test_forget_makes_launches_ask_again_but_keeps_holds() -> None:
    clock = Clock()
    book = TemplateBook(clock)
    book.remember("a")
    assert book.hold("a") is True
    book.forget()  # EC2 said a template is gone
    assert book.known() == [] and book.held() == ["a"] and book.hold("a") is False
    book.release(["a", "a"])
    assert book.known() == [] and book.held() == []  # a release does not bring back what was forgotten


def test_hydrated_templates_get_one_minute_and_do_not_reset_known_ones() -> None:
    clock = Clock()
    book = TemplateBook(clock)
    book.remember("used")
    clock.now = 40.0
    book.hydrate(["used", "left-by-an-old-process"])
    clock.now = TTL_SECONDS
    assert book.take_stale() == ["used"]  # hydration did not extend a template already booked
    clock.now = 40.0 + TTL_SECONDS
    assert book.take_stale() == ["left-by-an-old-process"]
