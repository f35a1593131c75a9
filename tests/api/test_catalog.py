import pytest
from pydantic import ValidationError

from api.catalog import InstanceTypeCatalog, load_default_catalog


def test_default_catalog_has_real_types_with_prices():
    cat = load_default_catalog()
    m5 = cat.get("m5.large")
    assert m5 is not None
    assert m5.cpu_cores == 2 and m5.memory_bytes == 8 * 2**30 and m5.pods == 29
    od = m5.offering("us-east-1a", "on-demand")
    assert od is not None and od.price == pytest.approx(0.096)
    spot = m5.cheapest(capacity_types={"spot"})
    assert spot is not None and spot.price < od.price
    # enough cheap spot types for spot-to-spot single-node consolidation (15 needed)
    assert len(cat.instance_types) >= 30


def test_catalog_rejects_duplicates_and_bad_quantities():
    base = {"kind": "InstanceTypeCatalog", "instanceTypes": [
        {"name": "a", "cpu": "2", "memory": "4Gi", "pods": 10, "offerings": []}]}
    InstanceTypeCatalog.model_validate(base)
    dup = {**base, "instanceTypes": base["instanceTypes"] * 2}
    with pytest.raises(ValidationError, match="duplicate"):
        InstanceTypeCatalog.model_validate(dup)
    bad = {**base, "instanceTypes": [{**base["instanceTypes"][0], "memory": "lots"}]}
    with pytest.raises(ValidationError, match="invalid quantity"):
        InstanceTypeCatalog.model_validate(bad)
