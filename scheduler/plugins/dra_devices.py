"""The snapshot's DRA devices as arrays, and the choice of devices for claims on a node.

Why: the DRA plugin (:mod:`scheduler.plugins.dra`) asks two questions on every placement
of a pod with claims: on which nodes can its unallocated claims be served, and which
devices serve them on the chosen node. This table answers both from arrays built once
per cycle (where each device is, which are taken, which match each request's
selectors), and keeps CEL results across cycles (:func:`device_matches`), since a device
record lives as long as its ResourceSlice is unchanged. Taking and releasing devices is
the plugin's business (``taken``); nothing here is deep-copied.

The choice is first fit in ResourceSlice order (slice name, then position), requests in
claim order, a ``firstAvailable`` request's alternatives in theirs, each value of a
``matchAttribute`` constraint in turn (sorted), without backtracking between requests.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.api.dra import (
    ALL,
    Device,
    DeviceClassInfo,
    DeviceConstraintInfo,
    DeviceRequestInfo,
    DraState,
    ResourceClaimInfo,
    attribute_of,
)
from scheduler.api.dra_cel import compile_selector, device_activation, driver_equals, matches
from scheduler.api.nodes import NodeMeta
from scheduler.framework import extension_points as ep
from scheduler.plugins.predicates import matches_node_affinity

Picks = list[tuple[str, int]]  # (request name, device index)

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


class DeviceTable:
    """Every device of the snapshot's ResourceSlices, by index, with where it is reachable."""

    def __init__(self, state: DraState, meta: Sequence[NodeMeta]) -> None:
        self.classes: dict[str, DeviceClassInfo] = state.classes
        self.count = count = len(meta)
        self.node_index = node_index = {node.name: i for i, node in enumerate(meta)}
        self.devices = devices = [d for name in sorted(state.slices) for d in state.slices[name]]
        self.index: dict[tuple[str, str, str], int] = {}
        for i, device in enumerate(devices):
            self.index.setdefault(device.key, i)
        self.taken = np.zeros(len(devices), dtype=bool)
        self.local: dict[int, list[int]] = {}  # node -> its node-local devices
        self.wide: list[tuple[int, ep.Mask]] = []  # devices reachable from several nodes
        for i, device in enumerate(devices):
            if device.node_name:
                if device.node_name in node_index:
                    self.local.setdefault(node_index[device.node_name], []).append(i)
            elif device.all_nodes:
                self.wide.append((i, np.ones(count, dtype=bool)))
            elif device.node_selector is not None:
                selector = device.node_selector
                mask = np.array([matches_node_affinity(n, selector) for n in meta], dtype=bool)
                self.wide.append((i, mask))
        self.device_node = np.full(len(devices), -1, dtype=np.intp)  # of node-local devices
        for node, on_node in self.local.items():
            self.device_node[on_node] = node
        self.is_local = self.device_node >= 0
        self.has_devices = np.zeros(count, dtype=bool)
        self.has_devices[list(self.local)] = True
        for _, mask in self.wide:
            self.has_devices |= mask
        self.everywhere = np.ones(count, dtype=bool)
        self.match_masks: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def claim_devices(self, claim: ResourceClaimInfo) -> list[int]:
        """Indices of the devices allocated to ``claim`` (those still published)."""
        found = (self.index.get((r.driver, r.pool, r.device)) for r in claim.allocated or ())
        return [i for i in found if i is not None]

    def request_mask(self, request: DeviceRequestInfo) -> np.ndarray:
        """Devices matching the request's class selectors and its own (once per cycle)."""
        device_class = self.classes[request.device_class]
        key = (device_class.name, device_class.selectors + request.selectors)
        mask = self.match_masks.get(key)
        if mask is None:
            expressions = key[1]
            mask = np.array([device_matches(expressions, d) for d in self.devices], dtype=bool)
            self.match_masks[key] = mask
        return mask

    def counts(self, request: DeviceRequestInfo) -> tuple[np.ndarray, np.ndarray]:
        """Per node: free matching devices it reaches, and all matching devices it reaches."""
        mask = self.request_mask(request)
        free = mask & ~self.taken
        free_count = np.bincount(self.device_node[self.is_local & free], minlength=self.count)
        all_count = np.bincount(self.device_node[self.is_local & mask], minlength=self.count)
        for i, reach_mask in self.wide:
            if mask[i]:
                all_count = all_count + reach_mask
                if free[i]:
                    free_count = free_count + reach_mask
        return free_count, all_count

    def fitting(self, claims: list[ResourceClaimInfo]) -> ep.Mask:
        """Nodes where ``claims`` can be allocated: counted over arrays for each request
        (exact for a single request), then chosen device by device when there are more."""
        fits = self.has_devices.copy()
        requests = [r for claim in claims for r in claim.requests]
        for request in requests:
            served = np.zeros(self.count, dtype=bool)  # by any of its alternatives
            for choice in request.choices:
                free_count, all_count = self.counts(choice)
                if choice.mode == ALL:
                    served |= (all_count > 0) & (free_count == all_count)
                else:
                    served |= free_count >= choice.count
            fits &= served
        if len(requests) > 1 or any(claim.constraints for claim in claims):
            for i in np.flatnonzero(fits):
                fits[i] = self.choose(claims, int(i)) is not None
        return fits

    def choose(self, claims: list[ResourceClaimInfo], node: int) -> dict[str, Picks] | None:
        """Devices for every request of ``claims`` on ``node``, or None if they do not fit."""
        reachable = self.local.get(node, []) + [i for i, mask in self.wide if mask[node]]
        used: set[int] = set()
        chosen: dict[str, Picks] = {}
        for claim in claims:
            found = self.constrained(claim, reachable, used)
            if found is None:
                return None
            used.update(i for _, i in found)
            chosen[claim.key] = found
        return chosen

    def constrained(
        self, claim: ResourceClaimInfo, reachable: list[int], used: set[int]
    ) -> Picks | None:
        """The claim's devices under its ``matchAttribute`` constraints: each value the
        node's devices offer is tried in turn (sorted), the first that serves wins."""
        matching = [c for c in claim.constraints if not c.distinct]
        if not matching:
            return self.serve(claim, reachable, used, {})
        offered = [
            sorted(
                {
                    v
                    for i in reachable
                    if (v := attribute_of(self.devices[i], c.attribute)) is not None
                },
                key=repr,
            )
            for c in matching
        ]
        for values in itertools.product(*offered):
            found = self.serve(claim, reachable, used, dict(zip(matching, values, strict=True)))
            if found is not None:
                return found
        return None

    def serve(
        self,
        claim: ResourceClaimInfo,
        reachable: list[int],
        used: set[int],
        fixed: dict[DeviceConstraintInfo, Any],
    ) -> Picks | None:
        """Every request of the claim, first fit, its alternatives in order."""
        distinct: dict[DeviceConstraintInfo, set[Any]] = {
            c: set() for c in claim.constraints if c.distinct
        }  # values self.taken so far
        mine = set(used)
        picks: Picks = []
        for request in claim.requests:
            for choice in request.choices:  # the first alternative that fits
                rules = {c: v for c, v in fixed.items() if c.covers(choice.name)}
                apart = [c for c in distinct if c.covers(choice.name)]
                take = self.pick(choice, reachable, mine, rules, apart, distinct)
                if take is not None:
                    break
            else:
                return None
            mine.update(take)
            picks += [(choice.name, i) for i in take]
        return picks

    def pick(
        self,
        request: DeviceRequestInfo,
        reachable: list[int],
        used: set[int],
        rules: dict[DeviceConstraintInfo, Any],
        apart: list[DeviceConstraintInfo],
        seen: dict[DeviceConstraintInfo, set[Any]],
    ) -> list[int] | None:
        """Free devices for one request among ``reachable``: those meeting ``rules``
        (matchAttribute values) and, for ``apart``, values not in ``seen`` (updated)."""
        mask = self.request_mask(request)
        matching = [
            i
            for i in reachable
            if mask[i]
            and all(attribute_of(self.devices[i], c.attribute) == v for c, v in rules.items())
            and all(attribute_of(self.devices[i], c.attribute) is not None for c in apart)
        ]
        free: list[int] = []
        values = {c: set(seen[c]) for c in apart}
        for i in matching:
            if self.taken[i] or i in used:
                continue
            mine = [attribute_of(self.devices[i], c.attribute) for c in apart]
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
                seen[c].update(attribute_of(self.devices[i], c.attribute) for i in take)
        return take

    def reach(self, picks: Picks) -> tuple[ep.Mask, str]:
        """Where devices ``picks`` can be used, and the node of a node-local one ("" if none)."""
        mask = self.everywhere.copy()
        node_name = ""
        for _, i in picks:
            device = self.devices[i]
            if device.node_name:
                node_name = device.node_name
                only = np.zeros(self.count, dtype=bool)
                only[self.node_index[device.node_name]] = True
                mask &= only
            else:
                mask &= next(m for j, m in self.wide if j == i)
        return mask, node_name
