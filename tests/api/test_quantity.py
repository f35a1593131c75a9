import pytest

from api.quantity import QuantityError, format_cpu, format_memory, parse_cpu, parse_memory


@pytest.mark.parametrize(("text", "cores"), [("2", 2.0), ("500m", 0.5), ("0.25", 0.25), ("1e3m", 1.0), (3, 3.0)])
def test_parse_cpu(text, cores):
    assert parse_cpu(text) == pytest.approx(cores)


@pytest.mark.parametrize(("text", "n"), [("8Gi", 8 * 2**30), ("512Mi", 2**29), ("1G", 10**9), ("1.5Ki", 1536),
                                         ("100", 100), ("0.5", 1)])
def test_parse_memory(text, n):
    assert parse_memory(text) == n


@pytest.mark.parametrize("bad", ["", "abc", "1Zi", "--1", "1.2.3"])
def test_rejects_garbage(bad):
    with pytest.raises(QuantityError):
        parse_memory(bad)


def test_format_round_trips():
    assert format_cpu(parse_cpu("1500m")) == "1500m"
    assert format_cpu(2.0) == "2"
    assert format_memory(parse_memory("8Gi")) == "8Gi"
    assert format_memory(1000) == "1000"
