"""Pods for the node-scale-adjuster tests: a pending GPU-sharing pod of our scheduler."""

from __future__ import annotations

from typing import Any

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def user_pod(
    name: str,
    *,
    fraction: str | None = "0.5",
    memory: str | None = None,
    devices: int | None = None,
    unschedulable: bool = True,
    node: str | None = None,
    phase: str = "Pending",
    scheduler: str = "kai-scheduler",
    namespace: str = "team",
    **spec: Any,
) -> dict[str, Any]:
    annotations = {}
    if fraction:
        annotations["gpu-fraction"] = fraction
    if memory:
        annotations["gpu-memory"] = memory
    if devices is not None:
        annotations["gpu-fraction-num-devices"] = str(devices)
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
            ],
            **spec,
        },
        "status": {"phase": phase, "conditions": [UNSCHEDULABLE] if unschedulable else []},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body
