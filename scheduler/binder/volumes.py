"""The binder's volume step: bind a pod's claims on its node before the pod, as kube-scheduler does.

Why this module exists: the scheduler placed a pod where its claims can be served
(:mod:`scheduler.plugins.volumes`) but writes nothing about volumes; the binder,
before it binds the pod, makes the same choice for the selected node
(:func:`scheduler.plugins.volume_matching.choose`, fresh reads) and commits it:

- a static PV: the PV's ``spec.claimRef`` names the claim (a replace guarded by the
  PV's resourceVersion, so two binders never give one PV to two claims); the PV
  controller of kube-controller-manager then binds the claim to it;
- dynamic provisioning: the claim is annotated ``volume.kubernetes.io/selected-node``;
  the provisioner creates the PV where the node can reach it;
- then the pod waits (looked at again every :data:`POLL_SECONDS`) until every claim
  is ``Bound``; after ``timeout`` seconds (``--volume-bind-timeout``, default 600 as
  kube-scheduler's bind timeout) the BindRequest fails, what was written for claims
  still unbound is undone, and the scheduler decides again in its next cycle.

:func:`plan` decides from plain objects (tested as a table); :class:`VolumeBinder` is
the thin edge that reads and writes: claims are read fresh, PVs and StorageClasses from a
listing shared by every waiting request for a second (:data:`LISTING_TTL`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from crds.names import SELECTED_NODE_ANNOTATION
from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import KubeController
from scheduler.api.nodes import NodeMeta
from scheduler.api.volumes import BOUND, ClaimInfo, VolumeState
from scheduler.binder.decide import Action
from scheduler.cache.parsing import FieldError
from scheduler.cache.volume_reading import pod_claims, read_claim, read_storage_class, read_volume
from scheduler.plugins import volume_matching

__all__ = ["DEFAULT_TIMEOUT", "POLL_SECONDS", "Plan", "VolumeBinder", "claims_of", "plan"]

DEFAULT_TIMEOUT: Final = 600.0
"""Seconds a pod's claims may take to bind (kube-scheduler's ``bindTimeoutSeconds``)."""
POLL_SECONDS: Final = 2.0
LISTING_TTL: Final = 1.0
"""PVs and StorageClasses are listed at most once a second for all requests waiting."""
BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"


def claims_of(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The pod's claim names (none for a pod without volumes, or with a bad volume list)."""
    spec = pod.get("spec") or {}
    try:
        return pod_claims(spec, str((pod.get("metadata") or {}).get("name") or ""))
    except FieldError:
        return ()


@dataclass(frozen=True, slots=True)
class Plan:
    """``ready``: bind the pod. ``write``: set ``claim_refs`` (PV name → claim) and
    ``annotate`` (claim names), then wait. ``wait``: look again later. ``fail``: give up
    with ``reason`` after undoing ``undo_refs`` (PV names) and ``undo_annotations``."""

    kind: Literal["ready", "write", "wait", "fail"]
    reason: str = ""
    claim_refs: dict[str, ClaimInfo] = field(default_factory=dict)
    annotate: tuple[str, ...] = ()
    undo_refs: tuple[str, ...] = ()
    undo_annotations: tuple[str, ...] = ()


def plan(
    namespace: str,
    claims: tuple[str, ...],
    node: NodeMeta,
    state: VolumeState,
    *,
    waited: float,
    timeout: float,
) -> Plan:
    """The next volume step for a pod of ``namespace`` with ``claims`` on ``node``."""
    unbound: list[ClaimInfo] = []
    for name in claims:
        claim = state.claims.get(f"{namespace}/{name}")
        if claim is None:
            return Plan("fail", f'persistentvolumeclaim "{name}" not found')
        if claim.phase != BOUND:
            unbound.append(claim)
    if not unbound:
        return Plan("ready")
    if waited >= timeout:
        keys = {(c.namespace, c.name) for c in unbound}
        return Plan(
            "fail",
            f"persistentvolumeclaims {', '.join(repr(c.name) for c in unbound)} not bound "
            f"within {timeout:g}s",
            undo_refs=tuple(
                sorted(
                    v.name
                    for v in state.volumes.values()
                    if v.claim_ref is not None
                    and (v.claim_ref[0], v.claim_ref[1]) in keys
                    and v.phase != BOUND
                )
            ),
            undo_annotations=tuple(c.name for c in unbound if c.selected_node),
        )
    prebound = {
        (v.claim_ref[0], v.claim_ref[1]) for v in state.volumes.values() if v.claim_ref is not None
    }
    pending = [
        c
        for c in unbound
        if not c.volume_name
        and (c.namespace, c.name) not in prebound
        and c.selected_node != node.name
    ]
    if not pending:
        return Plan("wait")
    chosen = volume_matching.choose(state, pending, node)
    if chosen is None:
        return Plan(
            "fail",
            f"node {node.name} no longer serves persistentvolumeclaims "
            f"{', '.join(repr(c.name) for c in pending)}",
        )
    by_key = {c.key: c for c in pending}
    refs = {pv: by_key[key] for key, pv in chosen.items() if pv != volume_matching.PROVISION}
    annotate = tuple(
        by_key[key].name for key, pv in chosen.items() if pv == volume_matching.PROVISION
    )
    return Plan("write", claim_refs=refs, annotate=annotate)


class VolumeBinder:
    """Reads a pod's volumes fresh from the server and carries out :func:`plan`."""

    def __init__(
        self,
        api: KubeController,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        listing_ttl: float = LISTING_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.timeout = timeout
        self.since: dict[tuple[str, str], float] = {}
        self.listing_ttl = listing_ttl
        self.clock = clock
        # (apiVersion, kind) -> (when listed, objects): PVs and classes, shared by requests
        self._listed: dict[tuple[str, str], tuple[float, list[Object]]] = {}

    async def _list(self, api_version: str, kind: str) -> list[Object]:
        """A listing at most ``listing_ttl`` old: safe, since a PV is re-read before it is
        written (:meth:`_claim_ref`), and dropped by every write of ours."""
        now = self.clock()
        found = self._listed.get((api_version, kind))
        if found is not None and now - found[0] < self.listing_ttl:
            return found[1]
        items = await self.api.list(api_version, kind, "")
        self._listed[(api_version, kind)] = (now, items)
        return items

    def forget(self, key: tuple[str, str]) -> None:
        self.since.pop(key, None)

    async def _state(self, namespace: str, claims: tuple[str, ...]) -> tuple[VolumeState, str]:
        state = VolumeState()
        for name in claims:
            try:
                raw = await self.api.get("v1", "PersistentVolumeClaim", namespace, name)
            except NotFoundError:
                continue
            try:
                claim = read_claim(raw)
            except FieldError as exc:
                return state, f"persistentvolumeclaim {name!r}: {exc}"
            state.claims[claim.key] = claim
        for raw in await self._list("v1", "PersistentVolume"):
            try:
                volume = read_volume(raw)
            except FieldError:
                continue  # a broken PV serves nobody; the scheduler reports it
            state.volumes[volume.name] = volume
        for raw in await self._list("storage.k8s.io/v1", "StorageClass"):
            try:
                found = read_storage_class(raw)
            except FieldError:
                continue
            state.classes[found.name] = found
        return state, ""

    async def prepare(
        self, key: tuple[str, str], pod: Mapping[str, Any], node: str, now: float
    ) -> Action | float | None:
        """None: the pod's claims are bound, bind it. A float: look again after that many
        seconds. An Action: ``fail`` (the reservation released) or ``retry``."""
        claims = claims_of(pod)
        if not claims:
            return None
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        started = self.since.setdefault(key, now)
        try:
            state, problem = await self._state(namespace, claims)
            if problem:
                return Action("fail", node, problem)
            raw_node = await self.api.get("v1", "Node", "", node)
            meta = raw_node.get("metadata") or {}
            node_meta = NodeMeta(
                name=node, labels=dict(meta.get("labels") or {}), taints=(),
                unschedulable=False, ready=True,
            )  # fmt: skip
            step = plan(
                namespace, claims, node_meta, state, waited=now - started, timeout=self.timeout
            )
            if step.kind == "ready":
                self.forget(key)
                return None
            if step.kind == "wait":
                return POLL_SECONDS
            if step.kind == "fail":
                await self._undo(namespace, step)
                self.forget(key)
                return Action("fail", node, step.reason)
            for pv, claim in step.claim_refs.items():
                await self._claim_ref(pv, claim)
            for name in step.annotate:
                await self._annotate(namespace, name, node)
        except ConflictError:  # a PV changed meanwhile: decide again on a fresh listing
            self._listed.pop(("v1", "PersistentVolume"), None)
            return POLL_SECONDS
        except NotFoundError as exc:
            return Action("retry", node, f"binding volumes: {exc.message}")
        except ApiError as exc:
            return Action("retry", node, f"binding volumes: {exc.message}")
        return POLL_SECONDS

    async def _claim_ref(self, pv: str, claim: ClaimInfo) -> None:
        """Give ``pv`` to ``claim``; ConflictError when another claim took it meanwhile."""
        current = await self.api.get("v1", "PersistentVolume", "", pv)
        ref = (current.get("spec") or {}).get("claimRef") or {}
        if ref and (ref.get("namespace"), ref.get("name")) != (claim.namespace, claim.name):
            raise ConflictError(
                ObjectRef("v1", "PersistentVolume", "", pv), "taken by another claim", 409
            )
        body: Object = copy.deepcopy(current)
        body["spec"]["claimRef"] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
        }
        body["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
        self._listed.pop(("v1", "PersistentVolume"), None)
        await self.api.replace(body)  # guarded by resourceVersion

    async def _annotate(self, namespace: str, claim: str, value: str | None) -> None:
        patch = {"metadata": {"annotations": {SELECTED_NODE_ANNOTATION: value}}}
        await self.api.merge_patch("v1", "PersistentVolumeClaim", namespace, claim, patch)

    async def _undo(self, namespace: str, step: Plan) -> None:
        """Release what was written for claims that did not bind (best effort)."""
        for pv in step.undo_refs:
            try:
                current = await self.api.get("v1", "PersistentVolume", "", pv)
                if (current.get("status") or {}).get("phase") == BOUND:
                    continue
                body = copy.deepcopy(current)
                body["spec"].pop("claimRef", None)
                self._listed.pop(("v1", "PersistentVolume"), None)
                (body["metadata"].get("annotations") or {}).pop(BOUND_BY_CONTROLLER, None)
                await self.api.replace(body)
            except ApiError:
                continue
        for name in step.undo_annotations:
            try:
                await self._annotate(namespace, name, None)
            except ApiError:
                continue
