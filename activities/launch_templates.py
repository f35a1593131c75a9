"""Making and deleting the fleet launches' launch templates, as Karpenter's AWS provider does.

- Made on demand by a launch (`ensure`, held until the launch's CreateFleet is answered: `release`).
- Deleted a minute after their last use (`sweep`, every minute in each worker process, runtime/worker_loop.py):
  planning/provisioning/launch_templates.py keeps the book; the replica that runs the controllers also books the
  cluster's templates found in EC2 when it starts them (`hydrate`), so those a previous process left are deleted
  too (Karpenter's hydrateCache, on election, and its cache eviction).
- Deleted with their EC2NodeClass (`delete_class`, from the class's finalizer: activities/nodeclass_finalizer.py),
  found by their `karpenter.k8s.aws/ec2nodeclass` and cluster tags (Karpenter's DeleteAll).

A sweep and a launch that finds its template unknown take one lock, so a template being deleted is made again
after the deletion, never found just before it. Deleting a template already gone counts as done.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from api import launch_templates as lt
from gateways.ec2 import Filter, FleetCloud
from planning.provisioning.launch_templates import TemplateBook
from telemetry import metrics

log = logging.getLogger(__name__)


class LaunchTemplates:
    """One per worker process (runtime/settings.py `Deps.launch_templates`): the book, the lock, the EC2 calls."""

    def __init__(self, ec2: FleetCloud, cluster: str, book: TemplateBook | None = None) -> None:
        self._ec2 = ec2
        self._cluster = cluster
        self.book = book or TemplateBook()
        self._lock = threading.Lock()

    def ensure(self, name: str, data: dict[str, Any], tags: dict[str, str]) -> None:
        """`name` exists in EC2 and is held for this launch (the caller releases it after CreateFleet)."""
        if self.book.hold(name):
            return
        try:
            with self._lock:
                self._ec2.ensure_launch_template(name, data, tags)
                self.book.remember(name)
        except BaseException:
            self.book.release([name])
            raise

    def release(self, names: list[str]) -> None:
        self.book.release(names)

    def forget(self) -> None:
        """EC2 said a template is gone: the next launches ask EC2 again (and make it)."""
        self.book.forget()

    def sweep(self) -> list[str]:
        """Delete the templates no launch used for a minute (and no launch holds)."""
        deleted = []
        with self._lock:
            for name in self.book.take_stale():
                if self._delete(name, lt.DeleteReason.UNUSED):
                    deleted.append(name)
        return deleted

    def hydrate(self) -> list[str]:
        """Book this cluster's templates found in EC2, so those no launch uses go a minute later (Karpenter's
        hydrateCache, once its process is elected leader: runtime/worker_loop.py). None without a cluster name:
        ours cannot be told from another cluster's."""
        if not self._cluster:
            return []
        found = self._ec2.launch_templates([{"Name": f"tag:{lt.EKS_CLUSTER_TAG}", "Values": [self._cluster]}])
        names = [str(t["LaunchTemplateName"]) for t in found if lt.is_ours(t, self._cluster)]
        self.book.hydrate(names)
        return names

    def _delete(self, name: str, reason: lt.DeleteReason) -> bool:
        found = self._ec2.launch_templates([{"Name": "launch-template-name", "Values": [name]}])
        for template in found:
            self._delete_one(template, reason)
        return bool(found)

    def _delete_one(self, template: dict[str, Any], reason: lt.DeleteReason) -> None:
        if self._ec2.delete_launch_template(str(template["LaunchTemplateId"])):
            metrics.LAUNCH_TEMPLATES_DELETED.labels(reason=reason.value).inc()
            log.info("deleted launch template %s (%s)", template.get("LaunchTemplateName"), reason.value)

    def delete_class(self, node_class: str) -> list[str]:
        """Delete every template of `node_class` in this cluster; each is tried, the first error raised after."""
        filters: list[Filter] = lt.class_filters(self._cluster, node_class)
        templates = lt.of_class(self._ec2.launch_templates(filters), self._cluster, node_class)
        failed: list[Exception] = []
        with self._lock:
            for template in templates:
                try:
                    self._delete_one(dict(template), lt.DeleteReason.NODECLASS_DELETED)
                except Exception as exc:  # the others are still deleted; the retry redoes the rest
                    failed.append(exc)
        if failed:
            raise failed[0]
        return sorted(str(t["LaunchTemplateName"]) for t in templates)
