"""Dynamic Resource Allocation: a pod goes only where free devices satisfy its ResourceClaims.

Why: a pod's ``spec.resourceClaims`` (a claim by name, or one the ResourceClaim
controller made from a template) are allocated by the scheduler, as kube-scheduler
and KAI do: the devices chosen for a claim come from ResourceSlices reachable from
the node, match the DeviceClass's and the request's CEL selectors, and are free
(not allocated to another claim, in the cluster or earlier in this cycle). The
choice is a dynamic constraint with reservations, so a gang's claims are allocated
all or none: a gang that cannot be placed whole rolls back, and the rollback
releases its devices through the deallocate event.

- a claim already allocated (``status.allocation``): the pod may go only where the
  allocation's ``nodeSelector`` allows (a claim shared by several pods is allocated
  once, by the first of them to be placed, and the others follow it);
- an unallocated claim: nodes where every request of every such claim of the pod
  finds its devices together; ``ExactCount`` takes ``count`` devices, ``All`` takes
  every matching device reachable from the node and needs each of them free;
- a running pod evicted (by preemption, reclaim or consolidation, in a simulation or
  for real) frees the devices of its allocated claims reserved for it alone, so a
  preemptor may be placed on them; the binder writes an allocation only once no other
  claim holds its devices (:mod:`scheduler.binder.claims`), so a pod placed on devices
  still being released waits for them;
- ``constraints``: ``matchAttribute`` (the devices of the named requests share the
  attribute's value: each value the node offers is tried in turn) and
  ``distinctAttribute`` (no two of them share it);
- ``firstAvailable``: the first alternative (in the claim's order) that fits on the
  node serves the request; the result names it ``<request>/<alternative>``;
- a claim missing, being deleted, not created yet (template), naming an unknown
  DeviceClass, or with an expression that does not compile: no node, and the
  reason names the object and field. Other pods are not affected.

Which devices serve a claim on a node is :class:`~scheduler.plugins.dra_devices.DeviceTable`'s
choice: first fit in ResourceSlice order, without backtracking between requests (a claim
whose requests overlap may be refused where a cleverer order would fit).

State is arrays over the snapshot's devices (``taken``), a per-request match mask
computed once per cycle, and a record per claim the cycle allocated; nothing is
deep-copied. Pods placed by an earlier cycle whose claims are not written yet
(Binding) hold their devices from session open. :func:`allocations` gives the
committer, per pod bound this cycle, the allocation results to write (the binder
writes them to the claims' status before it binds the pod).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.api.dra import Device, ResourceClaimInfo
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.plugins.dra_devices import DeviceTable, Picks
from scheduler.plugins.predicates import matches_node_affinity

STATE_KEY = "dra"
HOLDING = frozenset({PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING})


@dataclass(slots=True)
class _Allocation:
    """A claim allocated in this cycle: its devices, where they are, who uses it."""

    picks: Picks
    mask: ep.Mask
    node_name: str  # the node of a node-local device ("" when none)
    users: set[str] = field(default_factory=set)


@dataclass(slots=True)
class DraDecisions:
    """What the cycle allocated: claim key -> allocation, and the snapshot's devices."""

    devices: list[Device]
    allocated: dict[str, _Allocation]

    def allocation_of(self, claim_key: str) -> dict[str, Any] | None:
        """The ``status.allocation`` body (an AllocationResult) for a claim allocated here."""
        found = self.allocated.get(claim_key)
        if found is None:
            return None
        results = [
            {
                "request": request,
                "driver": self.devices[i].driver,
                "pool": self.devices[i].pool,
                "device": self.devices[i].name,
            }
            for request, i in found.picks
        ]
        body: dict[str, Any] = {"devices": {"results": results}}
        if found.node_name:
            term = {"key": "metadata.name", "operator": "In", "values": [found.node_name]}
            body["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [term]}]}
        else:
            selectors = [self.devices[i].node_selector for _, i in found.picks]
            if selectors and selectors[0] is not None:
                body["nodeSelector"] = dict(selectors[0])
        return body


def allocations(session: Session, pod: PodInfo) -> tuple[tuple[str, dict[str, Any]], ...]:
    """``(pod claim entry name, AllocationResult)`` per claim of ``pod`` allocated this cycle."""
    decisions: DraDecisions | None = session.plugin_state.get(STATE_KEY)
    if decisions is None or not pod.resource_claims:
        return ()
    found = []
    for entry, name in pod.resource_claims:
        body = decisions.allocation_of(f"{pod.namespace}/{name}") if name else None
        if body is not None:
            found.append((entry, body))
    return tuple(found)


class DraPlugin:
    """Registers the device-allocation dynamic constraint and its reservations."""

    name = "dra"

    def on_session_open(self, session: Session) -> None:
        snapshot = session.snapshot
        claimed = [pod for pod in snapshot.pods if pod.resource_claims]
        if not claimed:
            return  # nothing to constrain: placements pay nothing for this plugin
        state = snapshot.dra
        meta = snapshot.nodes.meta
        count = len(meta)
        table = DeviceTable(state, meta)
        taken = table.taken
        for claim in state.claims.values():
            taken[table.claim_devices(claim)] = True
        nowhere = np.zeros(count, dtype=bool)
        everywhere = np.ones(count, dtype=bool)
        problems: dict[str, str] = {}  # claim key -> why it cannot be allocated
        selector_masks: dict[str, ep.Mask] = {}
        allocated: dict[str, _Allocation] = {}
        by_pod: dict[str, list[str]] = {}
        freed_by: dict[str, list[int]] = {}  # evicted pod uid -> devices its claims freed

        def claim_problem(claim: ResourceClaimInfo) -> str:
            if claim.key in problems:
                return problems[claim.key]
            why = claim.problem
            for choice in (c for request in claim.requests for c in request.choices):
                if why:
                    break
                device_class = state.classes.get(choice.device_class)
                if device_class is None:
                    why = (
                        f"resourceclaim {claim.key} {choice.field}.deviceClassName: "
                        f'deviceclass "{choice.device_class}" not found'
                    )
                elif device_class.problem:
                    why = device_class.problem
            problems[claim.key] = why
            return why

        def allocated_mask(claim: ResourceClaimInfo) -> ep.Mask:
            mask = selector_masks.get(claim.key)
            if mask is None:
                selector = claim.node_selector
                mask = (
                    np.array([matches_node_affinity(n, selector) for n in meta], dtype=bool)
                    if selector
                    else everywhere
                )
                selector_masks[claim.key] = mask
            return mask

        def constrain(pod: PodInfo) -> ep.DynamicConstraint | None:
            if not pod.resource_claims:
                return None
            parts: list[tuple[ep.Mask, str]] = []
            pending: list[ResourceClaimInfo] = []
            for entry, name in pod.resource_claims:
                claim = state.claims.get(f"{pod.namespace}/{name}") if name else None
                if not name:
                    why = (
                        f'waiting for the resourceclaim of spec.resourceClaims "{entry}" '
                        "to be created"
                    )
                    parts.append((nowhere, why))
                elif claim is None:
                    parts.append((nowhere, f'resourceclaim "{name}" not found'))
                elif claim.deleting:
                    parts.append((nowhere, f'resourceclaim "{name}" is being deleted'))
                elif claim.key in allocated:
                    why = f'node(s) cannot reach the devices allocated to resourceclaim "{name}"'
                    parts.append((allocated[claim.key].mask, why))
                elif claim.allocated is not None:
                    why = f'node(s) do not match the allocation of resourceclaim "{name}"'
                    parts.append((allocated_mask(claim), why))
                    freed = freed_by.get(pod.uid)
                    if freed is not None and taken[freed].any():  # an evicted pod's devices
                        why = f'devices of resourceclaim "{name}" were given to another pod'
                        parts.append((nowhere, why))
                elif why := claim_problem(claim):
                    parts.append((nowhere, why))
                else:
                    pending.append(claim)
            if pending:
                joint = table.fitting(pending)
                which = ", ".join(f'"{c.name}"' for c in pending)
                parts.append(
                    (joint, f"node(s) do not have free devices for resourceclaim(s) {which}")
                )
            return ep.DynamicConstraint(parts=parts)

        def own_devices(pod: PodInfo) -> list[int]:
            """Devices of the pod's allocated claims reserved for it alone (none shared)."""
            found: list[int] = []
            for _, name in pod.resource_claims:
                claim = state.claims.get(f"{pod.namespace}/{name}") if name else None
                if claim is None or claim.allocated is None:
                    continue
                if set(claim.reserved_for) - {pod.uid}:
                    continue  # other pods still use it: evicting this one frees nothing
                found += table.claim_devices(claim)
            return found

        def on_allocate(pod: PodInfo) -> None:
            if not pod.resource_claims or pod.node < 0:
                return
            retaken = freed_by.pop(pod.uid, None)
            if retaken is not None:  # an eviction undone, or the victim kept: devices back
                taken[retaken] = True
            pending: list[ResourceClaimInfo] = []
            touched: list[str] = []
            for _, name in pod.resource_claims:
                claim = state.claims.get(f"{pod.namespace}/{name}") if name else None
                if claim is None or claim.allocated is not None or claim_problem(claim):
                    continue
                if claim.key in allocated:
                    allocated[claim.key].users.add(pod.uid)
                    touched.append(claim.key)
                else:
                    pending.append(claim)
            for key, picks in (table.choose(pending, pod.node) or {}).items() if pending else ():
                taken[[i for _, i in picks]] = True
                mask, node_name = table.reach(picks)
                allocated[key] = _Allocation(picks, mask, node_name, {pod.uid})
                touched.append(key)
            if touched:
                by_pod[pod.uid] = touched

        def on_deallocate(pod: PodInfo) -> None:
            if pod.uid not in by_pod and pod.resource_claims and pod.uid not in freed_by:
                # a running pod evicted (in a simulation, or for real): its claims' devices
                # are released with it, as its claims are deallocated once it is gone
                devices_freed = own_devices(pod)
                if devices_freed:
                    taken[devices_freed] = False
                    freed_by[pod.uid] = devices_freed
            for key in by_pod.pop(pod.uid, ()):
                record = allocated[key]
                record.users.discard(pod.uid)
                if not record.users:
                    taken[[i for _, i in record.picks]] = False
                    del allocated[key]

        # Pods placed by an earlier cycle whose binder has not yet written their claims'
        # allocation keep the devices (the same first-fit choice the cycle made).
        for pod in sorted(
            (p for p in claimed if p.node >= 0 and p.status in HOLDING),
            key=lambda p: (p.creation, p.uid),
        ):
            on_allocate(pod)
        for record in allocated.values():  # chosen by an earlier cycle: its bind holds them
            record.users.add("")  # whatever this cycle evicts or rolls back
        session.plugin_state[STATE_KEY] = DraDecisions(table.devices, allocated)
        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)
