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

Devices are taken first-fit in ResourceSlice order (slice name, then position);
requests are served in claim order, without backtracking between them (a claim
whose requests overlap may be refused where a cleverer order would fit).

State is arrays over the snapshot's devices (``taken``), a per-request match mask
computed once per cycle, and a record per claim the cycle allocated; nothing is
deep-copied. Pods placed by an earlier cycle whose claims are not written yet
(Binding) hold their devices from session open. :func:`allocations` gives the
committer, per pod bound this cycle, the allocation results to write (the binder
writes them to the claims' status before it binds the pod).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.api.dra import (
    ALL,
    Device,
    DeviceConstraintInfo,
    DeviceRequestInfo,
    ResourceClaimInfo,
    attribute_of,
)
from scheduler.api.dra_cel import compile_selector, device_activation, driver_equals, matches
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.plugins.predicates import matches_node_affinity

STATE_KEY = "dra"
HOLDING = frozenset({PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING})
Picks = list[tuple[str, int]]  # (request name, device index)


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


_MATCHES: dict[tuple[tuple[str, ...], int], tuple[Device, bool]] = {}
"""(expressions, id(device)) -> (the device, whether it matches), kept across cycles: a
device record lives as long as its ResourceSlice is unchanged, and CEL costs about a
millisecond per device and expression set in pure Python."""
_MATCHES_MAX = 1 << 18


def device_matches(expressions: tuple[str, ...], device: Device) -> bool:
    """Whether every expression holds for ``device`` (memoised; see :data:`_MATCHES`)."""
    key = (expressions, id(device))
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is device:
        return hit[1]
    result = True
    variables: dict[str, Any] | None = None
    for expression in expressions:
        driver = driver_equals(expression)
        if driver is not None:  # the usual class selector, without the interpreter
            result = device.driver == driver
        else:
            if variables is None:
                variables = device_activation(device.driver, device.attributes, device.capacity)
            result = matches(compile_selector(expression), variables)
        if not result:
            break
    if len(_MATCHES) >= _MATCHES_MAX:
        _MATCHES.clear()
    _MATCHES[key] = (device, result)
    return result


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
        node_index = {node.name: i for i, node in enumerate(meta)}
        devices = [d for name in sorted(state.slices) for d in state.slices[name]]
        index: dict[tuple[str, str, str], int] = {}
        for i, device in enumerate(devices):
            index.setdefault(device.key, i)
        taken = np.zeros(len(devices), dtype=bool)
        local: dict[int, list[int]] = {}  # node -> its node-local devices
        wide: list[tuple[int, ep.Mask]] = []  # devices reachable from several nodes
        for i, device in enumerate(devices):
            if device.node_name:
                if device.node_name in node_index:
                    local.setdefault(node_index[device.node_name], []).append(i)
            elif device.all_nodes:
                wide.append((i, np.ones(count, dtype=bool)))
            elif device.node_selector is not None:
                selector = device.node_selector
                mask = np.array([matches_node_affinity(n, selector) for n in meta], dtype=bool)
                wide.append((i, mask))
        device_node = np.full(len(devices), -1, dtype=np.intp)  # node of a node-local device
        for node, on_node in local.items():
            device_node[on_node] = node
        is_local = device_node >= 0
        has_devices = np.zeros(count, dtype=bool)
        has_devices[list(local)] = True
        for _, mask in wide:
            has_devices |= mask
        for claim in state.claims.values():
            for result in claim.allocated or ():
                at = index.get((result.driver, result.pool, result.device))
                if at is not None:
                    taken[at] = True
        nowhere = np.zeros(count, dtype=bool)
        everywhere = np.ones(count, dtype=bool)
        match_masks: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        problems: dict[str, str] = {}  # claim key -> why it cannot be allocated
        selector_masks: dict[str, ep.Mask] = {}
        allocated: dict[str, _Allocation] = {}
        by_pod: dict[str, list[str]] = {}
        freed_by: dict[str, list[int]] = {}  # evicted pod uid -> devices its claims freed

        def request_mask(request: DeviceRequestInfo) -> np.ndarray:
            device_class = state.classes[request.device_class]
            key = (device_class.name, device_class.selectors + request.selectors)
            mask = match_masks.get(key)
            if mask is None:
                expressions = key[1]
                mask = np.array([device_matches(expressions, d) for d in devices], dtype=bool)
                match_masks[key] = mask
            return mask

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

        def counts(request: DeviceRequestInfo) -> tuple[np.ndarray, np.ndarray]:
            """Per node: free matching devices it reaches, and all matching devices it reaches."""
            mask = request_mask(request)
            free = mask & ~taken
            free_count = np.bincount(device_node[is_local & free], minlength=count)
            all_count = np.bincount(device_node[is_local & mask], minlength=count)
            for i, reach_mask in wide:
                if mask[i]:
                    all_count = all_count + reach_mask
                    if free[i]:
                        free_count = free_count + reach_mask
            return free_count, all_count

        def fitting(claims: list[ResourceClaimInfo]) -> ep.Mask:
            """Nodes where ``claims`` can be allocated: counted over arrays for each request
            (exact for a single request), then chosen device by device when there are more."""
            fits = has_devices.copy()
            requests = [r for claim in claims for r in claim.requests]
            for request in requests:
                served = np.zeros(count, dtype=bool)  # by any of its alternatives
                for choice in request.choices:
                    free_count, all_count = counts(choice)
                    if choice.mode == ALL:
                        served |= (all_count > 0) & (free_count == all_count)
                    else:
                        served |= free_count >= choice.count
                fits &= served
            if len(requests) > 1 or any(claim.constraints for claim in claims):
                for i in np.flatnonzero(fits):
                    fits[i] = choose(claims, int(i)) is not None
            return fits

        def choose(claims: list[ResourceClaimInfo], node: int) -> dict[str, Picks] | None:
            """Devices for every request of ``claims`` on ``node``, or None if they do not fit."""
            reachable = local.get(node, []) + [i for i, mask in wide if mask[node]]
            used: set[int] = set()
            chosen: dict[str, Picks] = {}
            for claim in claims:
                found = constrained(claim, reachable, used)
                if found is None:
                    return None
                used.update(i for _, i in found)
                chosen[claim.key] = found
            return chosen

        def constrained(
            claim: ResourceClaimInfo, reachable: list[int], used: set[int]
        ) -> Picks | None:
            """The claim's devices under its ``matchAttribute`` constraints: each value the
            node's devices offer is tried in turn (sorted), the first that serves wins."""
            matching = [c for c in claim.constraints if not c.distinct]
            if not matching:
                return serve(claim, reachable, used, {})
            offered = [
                sorted(
                    {
                        v
                        for i in reachable
                        if (v := attribute_of(devices[i], c.attribute)) is not None
                    },
                    key=repr,
                )
                for c in matching
            ]
            for values in itertools.product(*offered):
                found = serve(claim, reachable, used, dict(zip(matching, values, strict=True)))
                if found is not None:
                    return found
            return None

        def serve(
            claim: ResourceClaimInfo,
            reachable: list[int],
            used: set[int],
            fixed: dict[DeviceConstraintInfo, Any],
        ) -> Picks | None:
            """Every request of the claim, first fit, its alternatives in order."""
            distinct: dict[DeviceConstraintInfo, set[Any]] = {
                c: set() for c in claim.constraints if c.distinct
            }  # values taken so far
            mine = set(used)
            picks: Picks = []
            for request in claim.requests:
                for choice in request.choices:  # the first alternative that fits
                    rules = {c: v for c, v in fixed.items() if c.covers(choice.name)}
                    apart = [c for c in distinct if c.covers(choice.name)]
                    take = pick(choice, reachable, mine, rules, apart, distinct)
                    if take is not None:
                        break
                else:
                    return None
                mine.update(take)
                picks += [(choice.name, i) for i in take]
            return picks

        def pick(
            request: DeviceRequestInfo,
            reachable: list[int],
            used: set[int],
            rules: dict[DeviceConstraintInfo, Any],
            apart: list[DeviceConstraintInfo],
            seen: dict[DeviceConstraintInfo, set[Any]],
        ) -> list[int] | None:
            mask = request_mask(request)
            matching = [
                i
                for i in reachable
                if mask[i]
                and all(attribute_of(devices[i], c.attribute) == v for c, v in rules.items())
                and all(attribute_of(devices[i], c.attribute) is not None for c in apart)
            ]
            free: list[int] = []
            values = {c: set(seen[c]) for c in apart}
            for i in matching:
                if taken[i] or i in used:
                    continue
                mine = [attribute_of(devices[i], c.attribute) for c in apart]
                if any(v in values[c] for c, v in zip(apart, mine, strict=True)):
                    continue  # distinctAttribute: a value already given
                free.append(i)
                for c, v in zip(apart, mine, strict=True):
                    values[c].add(v)
            if request.mode == ALL:
                take = free if matching and len(free) == len(matching) else None
            else:
                take = free[: request.count] if len(free) >= request.count else None
            if take is not None:
                for c in apart:
                    seen[c].update(attribute_of(devices[i], c.attribute) for i in take)
            return take

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
                joint = fitting(pending)
                which = ", ".join(f'"{c.name}"' for c in pending)
                parts.append(
                    (joint, f"node(s) do not have free devices for resourceclaim(s) {which}")
                )
            return ep.DynamicConstraint(parts=parts)

        def reach(picks: Picks) -> tuple[ep.Mask, str]:
            mask = everywhere.copy()
            node_name = ""
            for _, i in picks:
                device = devices[i]
                if device.node_name:
                    node_name = device.node_name
                    only = np.zeros(count, dtype=bool)
                    only[node_index[device.node_name]] = True
                    mask &= only
                else:
                    mask &= next(m for j, m in wide if j == i)
            return mask, node_name

        def own_devices(pod: PodInfo) -> list[int]:
            """Devices of the pod's allocated claims reserved for it alone (none shared)."""
            found: list[int] = []
            for _, name in pod.resource_claims:
                claim = state.claims.get(f"{pod.namespace}/{name}") if name else None
                if claim is None or claim.allocated is None:
                    continue
                if set(claim.reserved_for) - {pod.uid}:
                    continue  # other pods still use it: evicting this one frees nothing
                for result in claim.allocated:
                    at = index.get((result.driver, result.pool, result.device))
                    if at is not None:
                        found.append(at)
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
            for key, picks in (choose(pending, pod.node) or {}).items() if pending else ():
                taken[[i for _, i in picks]] = True
                mask, node_name = reach(picks)
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
        for key in [k for k in allocated]:  # decided before this cycle: not ours to write
            allocated[key].users.add("")
        session.plugin_state[STATE_KEY] = DraDecisions(devices, allocated)
        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)
