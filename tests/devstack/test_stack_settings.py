"""devstack/stack.py: the in-process worker of `nodeflow demo` launches the simulated world's image when the
scenario (`--scenario`, the user's own) has no EC2NodeClass: such launches are refused without an image."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from devstack.stack import Stack, StackOptions
from simulator.ec2 import DEFAULT_AMI


def test_the_workers_settings_carry_the_worlds_image(tmp_path: Path) -> None:
    stack = Stack(StackOptions(workdir=tmp_path, scenario=tmp_path / "mine.yaml", provisioning=True))
    stack.sim = SimpleNamespace(base_url="http://127.0.0.1:1", world=SimpleNamespace(
        ec2=SimpleNamespace(image_id=lambda: DEFAULT_AMI)))
    stack.queue_url = "http://127.0.0.1:2/queue/interruptions"
    settings = stack.worker_settings()
    assert settings.ami_id == DEFAULT_AMI
    assert (settings.cluster_endpoint, settings.interruption_queue_url, settings.provisioning) == (
        "http://127.0.0.1:1", "http://127.0.0.1:2/queue/interruptions", True)
