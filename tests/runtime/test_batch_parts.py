"""A window too large for one workflow's input starts as several (contracts/provisioning.py `batch_parts`,
runtime/pending_pods.py): each part's input, as the workers' converter writes it, stays under Temporal's 512 KiB
payload warning size, every pod is in exactly one part, in the window's order, and any window seen so far (2,000
pods) stays one part. The intake starting each part: tests/runtime/test_pending_pods.py."""

from __future__ import annotations

import uuid

from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.provisioning import PART_BYTES, PodRef, ProvisioningInput, batch_parts, ref_bytes

WARN = 512 * 1024  # Temporal's limit.blobSize.warn


def _refs(n: int, name_len: int = 30, ns: str = "shop") -> list[PodRef]:
    return [PodRef(key=f"{ns}/{f'web-{i:06d}'.ljust(name_len, 'x')}", uid=str(uuid.uuid4())) for i in range(n)]


def _input_bytes(pods: list[PodRef]) -> int:
    return len(pydantic_data_converter.payload_converter.to_payloads([ProvisioningInput(pods=pods)])[0].data)


def test_a_pods_estimate_is_never_below_what_the_converter_writes() -> None:
    for pods in (_refs(1), _refs(1, name_len=253, ns="n" * 63), [PodRef(key="ns/a", uid="u", virtual=True)]):
        empty = _input_bytes([])
        assert _input_bytes(pods) - empty <= ref_bytes(pods[0])


def test_any_window_seen_so_far_is_one_part() -> None:
    pods = _refs(2000)
    assert batch_parts(pods) == [pods]
    assert batch_parts([]) == []


def test_a_window_of_tens_of_thousands_of_pods_is_cut_under_the_warning_size() -> None:
    for pods in (_refs(30_000), _refs(6_000, name_len=253, ns="n" * 63)):
        parts = batch_parts(pods)
        assert len(parts) > 1
        assert [p for part in parts for p in part] == pods  # each pod once, in order
        sizes = [_input_bytes(part) for part in parts]
        assert max(sizes) < WARN, sizes
        assert min(sizes[:-1]) > PART_BYTES * 0.9  # parts are full, not many small ones
