"""Pods that named an upstream PodGroup before it existed are grouped once it does.

Why this module exists: a pod may name its ``podgroups.scheduling.k8s.io`` group before
the group is created (upstream allows it). Its reconcile then fails with a
``PodGrouperWarning`` (the group is missing), and nothing about the pod changes
afterwards to bring it back. When the upstream PodGroup appears (or changes), the
podgrouper's handler calls :func:`regroup_waiting`, which reconciles the namespace's pods
that name it and are not yet in a KAI PodGroup. When none is waiting, it reconciles one
member, so a changed group (the Job controller scales ``minCount``) reaches the KAI
PodGroup without waiting for a pod event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from crds.names import POD_GROUP_ANNOTATION
from integrations import fields, registry, upstream_workload
from kubeapi.protocol import Kube
from podgrouper import reconciling, settings


def to_reconcile(pods: Iterable[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    """The pods naming upstream PodGroup ``name`` that no KAI PodGroup holds yet; when all
    are held, the first of them (by name), whose reconcile brings the KAI PodGroup up to
    date with the group (a changed ``minCount``)."""
    members = sorted(
        (
            pod
            for pod in pods
            if upstream_workload.scheduling_group(pod) == name
            and not fields.metadata(pod).get("deletionTimestamp")
        ),
        key=fields.name,
    )
    waiting = [p for p in members if not fields.annotations_of(p).get(POD_GROUP_ANNOTATION)]
    return waiting or members[:1]


async def regroup_waiting(
    upstream: Mapping[str, Any],
    kube_: Kube,
    groupers: registry.GrouperRegistry,
    config: settings.PodGrouperSettings,
) -> list[reconciling.Outcome]:
    """Reconcile every pod waiting for ``upstream`` (a ``podgroups.scheduling.k8s.io``)."""
    pods = await kube_.list("v1", "Pod", fields.namespace(upstream))
    outcomes = []
    for pod in to_reconcile(pods, fields.name(upstream)):
        body = {"apiVersion": "v1", "kind": "Pod", **pod}
        outcomes.append(await reconciling.reconcile_pod(body, kube_, groupers, config))
    return outcomes
