"""The value types every DisruptionPolicy control shares: durations, money, percentages, a strict base model.

Kept apart from the controls themselves (api/disruption_policy.py, api/policy_controls.py) so both can use
them without importing each other.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from api.duration import parse_duration
from api.meta import K8sModel

# A positive Go duration made of whole s/m/h components ("30m", "1h30m", "600h").
POLICY_DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
# A non-negative decimal amount of US dollars ("0.05", "1", "0.004").
DECIMAL_PATTERN = r"^[0-9]+(\.[0-9]+)?$"
# A whole percentage 0%-100% ("25%", "0%", "100%").
PERCENT_PATTERN = r"^(100|[1-9]?[0-9])%$"
PERCENT_MAX_LENGTH = 4  # "100%": bounds the cost of the CRD's CEL/regex checks


class PolicyModel(K8sModel):
    """Unknown fields are errors here (a typo in a control must not silently switch it off)."""

    model_config = ConfigDict(extra="forbid")


def policy_duration(value: str | None) -> str | None:
    """Validate a positive s/m/h duration string; None passes through (the control is unset)."""
    if value is None:
        return None
    if not isinstance(value, str) or re.fullmatch(POLICY_DURATION_PATTERN, value) is None:
        raise ValueError(f"{value!r} is not a duration like 30m, 1h30m or 600h (pattern {POLICY_DURATION_PATTERN})")
    if parse_duration(value) <= timedelta(0):
        raise ValueError(f"{value!r} must be longer than 0s")
    return value


def to_timedelta(value: str | None) -> timedelta | None:
    return None if value is None else parse_duration(value)


def decimal_string(value: Any) -> str | None:
    """Validate money as a quoted decimal string: a float would make "0.1" inexact."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a quoted decimal string like \"0.05\" (money is never a float)")
    if re.fullmatch(DECIMAL_PATTERN, value) is None:
        raise ValueError(f"{value!r} is not a decimal amount like \"0.05\" (pattern {DECIMAL_PATTERN})")
    return value


def percent_string(value: Any) -> str | None:
    """Validate a whole percentage string ("25%"); a bare number is refused so 0.25 and 25 cannot be confused."""
    if value is None:
        return None
    if not isinstance(value, str) or re.fullmatch(PERCENT_PATTERN, value) is None:
        raise ValueError(f"{value!r} is not a percentage like \"25%\" (0%-100%, pattern {PERCENT_PATTERN})")
    return value


def percent_fraction(value: str | None) -> Decimal | None:
    """"25%" -> Decimal("0.25"); None stays None."""
    return None if value is None else Decimal(value[:-1]) / 100


# The field types of the controls: a field typed `PolicyDuration | None = None` is validated by the function above
# (None passes: the control is unset), so no model repeats a validator per field.
PolicyDuration = Annotated[str, AfterValidator(policy_duration)]
Percent = Annotated[str, BeforeValidator(percent_string), Field(max_length=PERCENT_MAX_LENGTH)]
Money = Annotated[str, BeforeValidator(decimal_string)]
