"""Volume binding: a pod goes only where its PersistentVolumeClaims can be served.

Why: kube-scheduler's VolumeBinding rules (docs/semantics.md §13) as a dynamic
constraint, because the PVs a pod takes are reserved for the rest of the cycle:
two pods of one gang never take the same PV, and a gang whose volumes cannot
all be served is not started in part (gang placement rolls back, and the
rollback releases the reservations through the deallocate event). Pods an earlier
cycle placed whose claims are not bound yet (Binding, or bound while the PV controller
catches up) hold their PVs from session open, as kube-scheduler's assume cache does.

- a claim that does not exist, or is being deleted: no node (the reason names it);
- a bound claim (``spec.volumeName`` set): its PV's node affinity; a missing PV: no node;
- an unbound claim of an ``Immediate`` class (or of no class): no node, until the
  PV controller binds it ("pod has unbound immediate PersistentVolumeClaims");
- an unbound ``WaitForFirstConsumer`` claim: nodes where a matching PV not yet
  reserved is reachable, or where the class may provision one
  (:mod:`scheduler.plugins.volume_matching`).

The engine stays pure: the binder makes the same choice for the chosen node
(:func:`volume_matching.choose`) and binds it. Pods without claims cost one
attribute test at session open (about 1.5 ms per 50,000 pods); when no pod has a
claim the plugin registers nothing, so placements pay nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.volumes import WAIT_FOR_FIRST_CONSUMER, ClaimInfo, VolumeInfo
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.plugins import volume_matching

HOLDING = frozenset({PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING})
AFFINITY_CONFLICT = "node(s) had volume node affinity conflict"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def no_volume_reason(claims: Sequence[str]) -> str:
    """kube-scheduler's reason, naming the claim(s) the node cannot serve."""
    which = "persistentvolumeclaim" if len(claims) == 1 else "persistentvolumeclaims"
    names = ", ".join(f'"{name}"' for name in claims)
    return f"node(s) didn't find available persistent volumes to bind {which} {names}"


class VolumesPlugin:
    """Registers the volume-binding dynamic constraint and its reservations."""

    name = "volumes"

    def on_session_open(self, session: Session) -> None:
        snapshot = session.snapshot
        claimed = [pod for pod in snapshot.pods if pod.claims]
        if not claimed:
            return  # nothing to constrain: placements pay nothing for this plugin
        state = snapshot.volumes
        meta = snapshot.nodes.meta
        count = len(meta)
        reserved: set[str] = set()  # PV names taken by pods placed in this cycle
        taken_by: dict[str, tuple[str, ...]] = {}  # pod uid -> PV names it reserved
        masks: dict[str, ep.Mask] = {}  # PV name -> nodes that reach it
        served_by: dict[str, list[VolumeInfo]] = {}  # claim key -> PVs serving it, best first
        provisionable: dict[str, ep.Mask] = {}  # StorageClass name -> nodes it provisions on
        nowhere = np.zeros(count, dtype=bool)

        def pv_mask(volume: VolumeInfo) -> ep.Mask:
            mask = masks.get(volume.name)
            if mask is None:
                mask = np.array(
                    [volume_matching.reachable(volume, node) for node in meta], dtype=bool
                )
                masks[volume.name] = mask
            return mask

        def candidates(claim: ClaimInfo) -> list[VolumeInfo]:
            found = served_by.get(claim.key)
            if found is None:
                found = served_by[claim.key] = volume_matching.candidates(state, claim)
            return found

        def provision_mask(claim: ClaimInfo) -> ep.Mask:
            storage_class = state.class_of(claim)
            if storage_class is None or not volume_matching.can_provision(storage_class):
                return nowhere
            mask = provisionable.get(storage_class.name)
            if mask is None:
                mask = np.array(
                    [volume_matching.topology_allows(storage_class, n) for n in meta], dtype=bool
                )
                provisionable[storage_class.name] = mask
            return mask

        def delayed_claims(pod: PodInfo) -> tuple[list[ClaimInfo], list[tuple[ep.Mask, str]]]:
            """The pod's unbound WaitForFirstConsumer claims, and the static parts of the rest."""
            delayed: list[ClaimInfo] = []
            parts: list[tuple[ep.Mask, str]] = []
            for name in pod.claims:
                claim = state.claims.get(f"{pod.namespace}/{name}")
                if claim is None:
                    parts.append((nowhere, f'persistentvolumeclaim "{name}" not found'))
                elif claim.deleting:
                    parts.append((nowhere, f'persistentvolumeclaim "{name}" is being deleted'))
                elif claim.volume_name:
                    volume = state.volumes.get(claim.volume_name)
                    if volume is None:
                        parts.append(
                            (
                                nowhere,
                                f'persistentvolumeclaim "{name}" bound to non-existent '
                                f'persistentvolume "{claim.volume_name}"',
                            )
                        )
                    else:
                        parts.append((pv_mask(volume), AFFINITY_CONFLICT))
                else:
                    storage_class = state.class_of(claim)
                    if (
                        storage_class is None
                        or storage_class.binding_mode != WAIT_FOR_FIRST_CONSUMER
                    ):
                        parts.append((nowhere, UNBOUND_IMMEDIATE))
                    else:
                        delayed.append(claim)
            return delayed, parts

        def constrain(pod: PodInfo) -> ep.DynamicConstraint | None:
            if not pod.claims:
                return None
            delayed, parts = delayed_claims(pod)
            both = None
            for claim in delayed:  # each claim on its own: a PV not reserved, or provisioning
                mask = provision_mask(claim).copy()
                for volume in candidates(claim):
                    if volume.name not in reserved:
                        mask |= pv_mask(volume)
                parts.append((mask, no_volume_reason([claim.name])))
                both = mask if both is None else both & mask
            if len(delayed) > 1 and both is not None:  # together: a PV each, decided per node
                joint = np.zeros(count, dtype=bool)
                for i in np.flatnonzero(both):
                    joint[i] = choose(delayed, int(i)) is not None
                parts.append((joint, no_volume_reason([c.name for c in delayed])))
            return ep.DynamicConstraint(parts=parts)

        def choose(claims: list[ClaimInfo], node: int) -> dict[str, str] | None:
            return volume_matching.choose(
                state,
                claims,
                meta[node],
                reserved,
                on_node=lambda v: bool(pv_mask(v)[node]),
                served_by=candidates,
            )

        def on_allocate(pod: PodInfo) -> None:
            if not pod.claims or pod.node < 0:
                return
            delayed, _ = delayed_claims(pod)
            chosen = choose(delayed, pod.node) if delayed else None
            picked = tuple(pv for pv in (chosen or {}).values() if pv != volume_matching.PROVISION)
            if picked:
                taken_by[pod.uid] = picked
                reserved.update(picked)

        def on_deallocate(pod: PodInfo) -> None:
            for pv in taken_by.pop(pod.uid, ()):
                reserved.discard(pv)

        # Pods placed by an earlier cycle whose binder has not yet written their choice
        # (Binding, or Bound while the PV controller catches up) keep their PVs.
        for pod in sorted(
            (p for p in claimed if p.node >= 0 and p.status in HOLDING),
            key=lambda p: (p.creation, p.uid),
        ):
            on_allocate(pod)

        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)
