"""Which PersistentVolume serves an unbound claim on a node, as kube-scheduler's VolumeBinding says.

Why: the scheduler's volume plugin (where may the pod go, which PVs does it
reserve) and the binder (which PV does it bind for the chosen node) must make
the same choice; these pure functions are that choice, written once.

Rules (kube-scheduler's ``FindMatchingVolume``): a PV serves a claim when it is
not being deleted, its ``claimRef`` is unset or names this claim, it is
``Available`` (unless pre-bound to the claim), its storage class equals the
claim's, its volume mode equals the claim's, its access modes include every
requested one, its capacity is at least the request, its labels match the
claim's selector, and its ``nodeAffinity.required`` admits the node. A PV
pre-bound to the claim wins; otherwise the smallest fitting PV (ties by name).
A claim without a fitting PV may be provisioned dynamically when its class has
a provisioner other than ``kubernetes.io/no-provisioner``, on nodes its
``allowedTopologies`` admit (all nodes when empty).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from crds.names import NO_PROVISIONER
from scheduler.api.nodes import NodeMeta
from scheduler.api.volumes import AVAILABLE, ClaimInfo, StorageClassInfo, VolumeInfo, VolumeState
from scheduler.plugins.predicates import matches_label_selector, matches_node_affinity

PROVISION = ""
"""The choice "provision a new volume" (no PV name)."""


def is_prebound(volume: VolumeInfo, claim: ClaimInfo) -> bool:
    """``volume.spec.claimRef`` names ``claim`` (and its uid, when both have one)."""
    ref = volume.claim_ref
    if ref is None or (ref[0], ref[1]) != (claim.namespace, claim.name):
        return False
    return not ref[2] or not claim.uid or ref[2] == claim.uid


def serves(volume: VolumeInfo, claim: ClaimInfo, class_name: str) -> bool:
    """Every rule of the module docstring except node affinity."""
    if volume.deleting:
        return False
    prebound = is_prebound(volume, claim)
    if volume.claim_ref is not None and not prebound:
        return False
    if not prebound and volume.phase not in (AVAILABLE, ""):
        return False
    if volume.storage_class != class_name or volume.volume_mode != claim.volume_mode:
        return False
    if not claim.access_modes <= volume.access_modes or volume.capacity < claim.request:
        return False
    return claim.selector is None or matches_label_selector(volume.labels, claim.selector)


def candidates(state: VolumeState, claim: ClaimInfo) -> list[VolumeInfo]:
    """The PVs that may serve ``claim`` somewhere, best first (pre-bound, then smallest)."""
    class_name = state.class_name(claim)
    found = [v for v in state.volumes.values() if serves(v, claim, class_name)]
    found.sort(key=lambda v: (not is_prebound(v, claim), v.capacity, v.name))
    return found


def can_provision(storage_class: StorageClassInfo | None) -> bool:
    return (
        storage_class is not None
        and bool(storage_class.provisioner)
        and storage_class.provisioner != NO_PROVISIONER
    )


def topology_allows(storage_class: StorageClassInfo, node: NodeMeta) -> bool:
    """``allowedTopologies``: terms ORed, a term's label expressions ANDed (empty: any node)."""
    if not storage_class.allowed_topologies:
        return True
    for term in storage_class.allowed_topologies:
        expressions: Sequence[Mapping[str, Any]] = term.get("matchLabelExpressions") or ()
        if all(
            node.labels.get(str(e.get("key"))) in [str(v) for v in e.get("values") or ()]
            for e in expressions
        ):
            return True
    return False


def reachable(volume: VolumeInfo, node: NodeMeta) -> bool:
    return matches_node_affinity(node, volume.node_affinity)


def choose(
    state: VolumeState,
    claims: Iterable[ClaimInfo],
    node: NodeMeta,
    taken: Collection[str] = (),
    *,
    on_node: Callable[[VolumeInfo], bool] | None = None,
    served_by: Callable[[ClaimInfo], list[VolumeInfo]] | None = None,
) -> dict[str, str] | None:
    """Claim key → PV name (or :data:`PROVISION`) for every claim on ``node``, or None.

    Greedy in claim order, each claim taking its best PV not in ``taken`` nor chosen
    for an earlier claim, as kube-scheduler's ``FindPodVolumes`` does. ``on_node``
    replaces the node-affinity test and ``served_by`` :func:`candidates` (the plugin passes
    its per-cycle caches).
    """
    fits = on_node or (lambda volume: reachable(volume, node))
    serving = served_by or (lambda claim: candidates(state, claim))
    chosen: dict[str, str] = {}
    used = set(taken)
    for claim in claims:
        pick = next((v.name for v in serving(claim) if v.name not in used and fits(v)), None)
        if pick is None:
            storage_class = state.class_of(claim)
            if not can_provision(storage_class):
                return None
            assert storage_class is not None
            if not topology_allows(storage_class, node):
                return None
            pick = PROVISION
        else:
            used.add(pick)
        chosen[claim.key] = pick
    return chosen
