"""The binder's DRA step: write each ResourceClaim's allocation and reservation before the pod.

Why this module exists: the scheduler chose the devices of a pod's unallocated
ResourceClaims (:mod:`scheduler.plugins.dra`) and put them in the BindRequest's
``spec.resourceClaimAllocations`` (entry name → AllocationResult), as KAI does; the
binder makes them real, before it binds the pod, as kube-scheduler's DRA plugin does
in its PreBind step:

- an unallocated claim gets ``status.allocation`` (the scheduler's choice) and
  ``status.reservedFor`` naming the pod, once no other claim holds those devices (a
  device of a pod the scheduler evicted stays allocated until that pod is gone and
  its claim deallocated: the request is retried meanwhile);
- an allocated claim (shared, or allocated by another pod's bind) whose allocation the
  node satisfies gets the pod added to ``reservedFor``; one the node does not satisfy
  fails the request (the scheduler decides again);
- an unallocated claim the BindRequest has no allocation for, or a template claim not
  created yet, is retried (the scheduler's next cycle will carry it).

Each write is a merge patch of the claim's ``status`` carrying the ``resourceVersion``
it was planned on, so two binders never allocate one claim twice: a conflict plans
again on a fresh read. :func:`plan` decides from plain objects (tested as a table);
:func:`prepare` is the thin edge. A request that finally fails has what it wrote undone
by :func:`release` (kube-scheduler's Unreserve), so a pod is not tied to the devices of a
failed bind.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import KubeController
from scheduler.api.dra import API_VERSION
from scheduler.api.nodes import NodeMeta
from scheduler.binder.decide import Action
from scheduler.cache.dra_reading import pod_resource_claims
from scheduler.cache.parsing import FieldError
from scheduler.plugins.predicates import matches_node_affinity

log = logging.getLogger("podmuster.binder.claims")

KIND: Final = "ResourceClaim"
MAX_RESERVED: Final = 256
"""Consumers one claim may be reserved for (Kubernetes' ``ResourceClaimReservedForMaxSize``)."""


@dataclass(frozen=True, slots=True)
class Write:
    """A status merge patch for one claim (with the resourceVersion it was planned on)."""

    claim: str
    patch: dict[str, Any]


def _consumer(pod: Mapping[str, Any]) -> dict[str, str]:
    meta = pod.get("metadata") or {}
    return {"resource": "pods", "name": str(meta.get("name")), "uid": str(meta.get("uid") or "")}


def allocations_of(request: Mapping[str, Any]) -> dict[str, Any]:
    """The BindRequest's allocations by pod claim entry name."""
    spec = request.get("spec") or {}
    return {
        str(entry.get("name")): entry.get("allocation")
        for entry in spec.get("resourceClaimAllocations") or ()
        if isinstance(entry, Mapping) and entry.get("allocation")
    }


def held_devices(claims: list[Object]) -> dict[tuple[str, str, str], str]:
    """Devices allocated to ``claims``: ``(driver, pool, device)`` -> ``ns/name`` of the claim."""
    held: dict[tuple[str, str, str], str] = {}
    for claim in claims:
        meta = claim.get("metadata") or {}
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            held[device] = f"{meta.get('namespace')}/{meta.get('name')}"
    return held


def plan(
    pod: Mapping[str, Any],
    request: Mapping[str, Any],
    claims: Mapping[str, Object | None],
    node: NodeMeta,
    held: Mapping[tuple[str, str, str], str] | None = None,
) -> list[Write] | Action:
    """The claim writes that must precede the bind, or an Action (``fail`` / ``retry``).

    ``claims`` maps each claim name of the pod to its current object (None: missing);
    ``held`` the devices other claims hold (an allocation taking one of them waits: the
    device is still being released by a pod the scheduler evicted).
    """
    try:
        entries = pod_resource_claims(pod.get("spec") or {}, pod.get("status") or {})
    except FieldError as exc:
        return Action("fail", node.name, f"pod {exc.field}: {exc.message}")
    chosen = allocations_of(request)
    consumer = _consumer(pod)
    writes: list[Write] = []
    for entry, name in entries:
        if not name:
            return Action("retry", node.name, f'resourceclaim of "{entry}" is not created yet')
        claim = claims.get(name)
        if claim is None:
            return Action("retry", node.name, f'resourceclaim "{name}" not found')
        status = claim.get("status") or {}
        reserved = list(status.get("reservedFor") or ())
        version = str((claim.get("metadata") or {}).get("resourceVersion") or "")
        meta = {"resourceVersion": version} if version else {}
        if any(ref.get("uid") == consumer["uid"] for ref in reserved):
            continue
        if len(reserved) >= MAX_RESERVED:
            return Action("fail", node.name, f'resourceclaim "{name}" is reserved for too many')
        allocation = status.get("allocation")
        if allocation is None:
            wanted = chosen.get(entry)
            if wanted is None:
                why = (
                    f'resourceclaim "{name}" is not allocated and the request carries no allocation'
                )
                return Action("fail", node.name, why)
            for result in (wanted.get("devices") or {}).get("results") or ():
                device = (
                    str(result.get("driver")),
                    str(result.get("pool")),
                    str(result.get("device")),
                )
                holder = (held or {}).get(device)
                if holder is not None and holder != f"{claim['metadata'].get('namespace')}/{name}":
                    why = f"device {'/'.join(device)} is still allocated to resourceclaim {holder}"
                    return Action("retry", node.name, why)
            body = {"allocation": wanted, "reservedFor": [*reserved, consumer]}
            writes.append(Write(name, {"metadata": meta, "status": body}))
            continue
        if not matches_node_affinity(node, allocation.get("nodeSelector")):
            why = f'resourceclaim "{name}" is allocated to devices node {node.name} cannot reach'
            return Action("fail", node.name, why)
        body = {"reservedFor": [*reserved, consumer]}
        writes.append(Write(name, {"metadata": meta, "status": body}))
    return writes


async def prepare(
    api: KubeController, request: Mapping[str, Any], pod: Mapping[str, Any], node: str
) -> Action | None:
    """Write the pod's claims (None: done, bind it), or the Action to record instead."""
    spec = pod.get("spec") or {}
    if not spec.get("resourceClaims"):
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    try:
        fresh = await api.get("v1", "Pod", namespace, str(pod["metadata"]["name"]))
        raw_node = await api.get("v1", "Node", "", node)
        node_meta = NodeMeta(
            name=node, labels=dict((raw_node.get("metadata") or {}).get("labels") or {}),
            taints=(), unschedulable=False, ready=True,
        )  # fmt: skip
        entries = pod_resource_claims(fresh.get("spec") or {}, fresh.get("status") or {})
        claims: dict[str, Object | None] = {}
        for _, name in entries:
            if name:
                try:
                    claims[name] = await api.get(API_VERSION, KIND, namespace, name)
                except NotFoundError:
                    claims[name] = None
        unallocated = any(
            c is not None and not (c.get("status") or {}).get("allocation") for c in claims.values()
        )
        held = held_devices(await api.list(API_VERSION, KIND, "")) if unallocated else {}
        step = plan(fresh, request, claims, node_meta, held)
        if isinstance(step, Action):
            return step
        for write in step:
            await api.patch(
                API_VERSION, KIND, namespace, write.claim, write.patch, subresource="status"
            )
    except FieldError as exc:
        return Action("fail", node, f"pod {exc.field}: {exc.message}")
    except ConflictError:  # a claim changed since it was read: plan again
        return Action("retry", node, "resourceclaim changed meanwhile")
    except ApiError as exc:
        return Action("retry", node, f"writing resource claims: {exc.message}")
    return None


async def release(api: KubeController, request: Mapping[str, Any]) -> None:
    """Undo what :func:`prepare` wrote for a request that finally failed, as
    kube-scheduler's Unreserve does: the pod leaves ``reservedFor``, and a claim this
    request allocated and nobody else uses is deallocated, so the scheduler may choose
    its devices afresh. A claim changed meanwhile is left alone."""
    chosen = allocations_of(request)
    if not chosen:
        return  # it allocated nothing (a pod without claims, or claims allocated before)
    spec = request.get("spec") or {}
    meta = request.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    try:
        pod = await api.get("v1", "Pod", namespace, str(spec.get("podName") or meta.get("name")))
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        entries = pod_resource_claims(pod.get("spec") or {}, pod.get("status") or {})
        for entry, name in entries:
            if not name:
                continue
            claim = await api.get(API_VERSION, KIND, namespace, name)
            status = claim.get("status") or {}
            reserved = list(status.get("reservedFor") or ())
            others = [ref for ref in reserved if ref.get("uid") != uid]
            if len(others) == len(reserved):
                continue  # not reserved for this pod
            version = str((claim.get("metadata") or {}).get("resourceVersion") or "")
            body: dict[str, Any] = {"reservedFor": others or None}
            if not others and chosen.get(entry) == status.get("allocation"):
                body["allocation"] = None
            patch = {"metadata": {"resourceVersion": version}, "status": body}
            await api.patch(API_VERSION, KIND, namespace, name, patch, subresource="status")
    except (FieldError, ApiError) as exc:
        log.warning("releasing the resource claims of %s/%s: %s", namespace, meta.get("name"), exc)
