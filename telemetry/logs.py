"""Structured logs: one JSON object per line, so log pipelines can filter by node, workflow or reason."""

from __future__ import annotations

import json
import logging
from typing import Any

_STANDARD_RECORD_FIELDS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the `extra=` fields (node, workflow_id, reason...) as keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                               "msg": record.getMessage()}
        for key, value in vars(record).items():
            if key not in _STANDARD_RECORD_FIELDS and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)
