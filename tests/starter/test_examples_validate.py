"""Every bundled example is valid Karpenter v1, so copying one into a cluster works."""

from pathlib import Path

import pytest

from starter.cli import run

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-f", str(path)]) == 0, capsys.readouterr().out


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 6
