"""EC2 instance ids inside Kubernetes providerIDs (`aws:///<zone>/<instance-id>`)."""

from __future__ import annotations

import re

INSTANCE_ID = re.compile(r"^i-[0-9a-zA-Z]{1,32}$")


def instance_id_from_provider_id(provider_id: str | None) -> str | None:
    """`aws:///us-east-1a/i-0123` -> `i-0123`; anything else (another cloud, junk, None) -> None."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    candidate = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return candidate if INSTANCE_ID.match(candidate) else None
