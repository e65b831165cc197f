"""The podgrouper's settings (KAI podgrouper flags), validated when they are built.

Why this module exists: the CLI, the kopf handlers and the reconcile all read the same
few settings; one frozen value, checked once, keeps them from drifting and from being
parsed at use.  :meth:`PodGrouperSettings.grouping` gives the part the adapters read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crds.names import DEFAULT_SCHEDULER_NAME, NODE_POOL_LABEL, QUEUE_LABEL
from integrations import base
from podgrouper import selectors


@dataclass(frozen=True, slots=True)
class PodGrouperSettings:
    """What ``podmuster run podgrouper`` is told; defaults are KAI's."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    queue_label_key: str = QUEUE_LABEL
    nodepool_label_key: str = NODE_POOL_LABEL
    namespace_selector: selectors.LabelSelector = field(default_factory=selectors.LabelSelector)
    pod_selector: selectors.LabelSelector = field(default_factory=selectors.LabelSelector)
    default_priorities_configmap_name: str = ""
    default_priorities_configmap_namespace: str = ""
    knative_gang_schedule: bool = True
    max_concurrent_reconciles: int = 10

    def __post_init__(self) -> None:
        if bool(self.default_priorities_configmap_name) != bool(
            self.default_priorities_configmap_namespace
        ):
            raise ValueError(
                "settings default-priorities-configmap-name and "
                "default-priorities-configmap-namespace must be given together"
            )
        if not self.scheduler_name:
            raise ValueError("setting scheduler-name must not be empty")
        if not self.queue_label_key or not self.nodepool_label_key:
            raise ValueError("settings queue-label-key and nodepool-label-key must not be empty")
        if self.max_concurrent_reconciles < 1:
            raise ValueError("setting max-concurrent-reconciles must be at least 1")

    @property
    def default_priorities_configmap(self) -> str:
        """``namespace/name`` of the default-priorities ConfigMap, or empty."""
        if not self.default_priorities_configmap_name:
            return ""
        namespace = self.default_priorities_configmap_namespace
        return f"{namespace}/{self.default_priorities_configmap_name}"

    def grouping(self) -> base.GroupingSettings:
        """The settings the adapters read."""
        return base.GroupingSettings(
            queue_label_key=self.queue_label_key,
            nodepool_label_key=self.nodepool_label_key,
            knative_gang_schedule=self.knative_gang_schedule,
            default_priorities_configmap=self.default_priorities_configmap,
        )
