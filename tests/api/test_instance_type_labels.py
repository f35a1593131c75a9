"""Well-known labels of instance types (api/instance_types/labels.py), as Karpenter's computeRequirements writes
them, from moto's copy of AWS's DescribeInstanceTypes data."""

from __future__ import annotations

from support.ec2_types_data import all_describe_items, describe_item

from api.catalog import InstanceType
from api.instance_types import labels as T
from api.instance_types.from_describe import from_describe


def _labels(name: str) -> dict[str, str]:
    it = from_describe(describe_item(name))
    assert it is not None
    return it.labels


def test_m5_large() -> None:
    labels = _labels("m5.large")
    assert {k: labels[k] for k in (T.CATEGORY, T.FAMILY, T.GENERATION, T.SIZE, T.CPU, T.MEMORY)} == {
        T.CATEGORY: "m", T.FAMILY: "m5", T.GENERATION: "5", T.SIZE: "large", T.CPU: "2", T.MEMORY: "8192"}
    assert labels[T.CPU_MANUFACTURER] == "intel"
    assert labels[T.CPU_CLOCK_MHZ] == "3100"
    assert labels[T.HYPERVISOR] == "nitro"
    assert labels[T.EBS_BANDWIDTH] == "4750"
    assert labels[T.NETWORK_BANDWIDTH] == "750"  # 0.75 Gbps baseline
    assert labels[T.ENCRYPTION_IN_TRANSIT] == "false"
    assert labels[T.CAPABILITY_FLEX] == "false"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert T.LOCAL_NVME not in labels and T.GPU_NAME not in labels


def test_gpu_and_nvme_of_p4d() -> None:
    labels = _labels("p4d.24xlarge")
    assert labels[T.GPU_NAME] == "a100"
    assert labels[T.GPU_MANUFACTURER] == "nvidia"
    assert labels[T.GPU_COUNT] == "8"
    assert labels[T.GPU_MEMORY] == "40960"
    assert labels[T.LOCAL_NVME] == "8000"
    assert labels[T.NETWORK_BANDWIDTH] == "400000"  # 4 cards x 100 Gbps
    assert labels[T.ENCRYPTION_IN_TRANSIT] == "true"


def test_graviton_and_flex_and_u_types() -> None:
    assert _labels("c6g.xlarge")[T.CPU_MANUFACTURER] == "aws"
    assert _labels("c6g.xlarge")["kubernetes.io/arch"] == "arm64"
    items = all_describe_items()
    flex = next(n for n in items if "-flex." in n)
    assert _labels(flex)[T.CAPABILITY_FLEX] == "true"
    u = next((n for n in items if n.startswith("u-") and "tb1." in n), None)
    if u is not None:  # u-6tb1.metal: category "u", generation "1"
        assert _labels(u)[T.CATEGORY] == "u" and _labels(u)[T.GENERATION] == "1"


def test_neuron_and_inference_accelerators() -> None:
    items = all_describe_items()
    inf = next(n for n in items if n.startswith("inf2."))
    labels = _labels(inf)
    assert labels[T.ACCELERATOR_MANUFACTURER] == "aws"
    assert labels[T.ACCELERATOR_NAME] == "inferentia2"
    assert int(labels[T.ACCELERATOR_COUNT]) >= 1


def test_metal_hypervisor_is_empty() -> None:
    assert _labels("m5.metal")[T.HYPERVISOR] == ""


def test_every_type_of_aws_parses_and_labels_are_strings() -> None:
    count = 0
    for name, item in all_describe_items().items():
        it = from_describe(item)
        if it is None:
            continue
        count += 1
        assert all(isinstance(v, str) for v in it.labels.values()), name
        assert it.pods > 0
    assert count > 900


def test_hand_written_type_gets_name_labels_only() -> None:
    it = InstanceType(name="c7i.2xlarge", cpu="8", memory="16Gi", pods=58)
    labels = it.labels
    assert labels[T.GENERATION] == "7" and labels[T.FAMILY] == "c7i" and labels[T.MEMORY] == "16384"
    assert T.HYPERVISOR not in labels and T.CPU_MANUFACTURER not in labels
