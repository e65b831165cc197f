"""GPU kinds per node: fractional GPUs, MIG strategies, and the shared-group node score.

Why: which GPU requests a node can serve depends on how its GPUs are offered
(docs/semantics.md §6): a MIG ``single`` node offers only whole GPUs, a ``mixed``
node only MIG slices, a node without MIG no slices, and a node without the
``nvidia.com/gpu.memory`` label cannot size a ``gpu-memory`` request. These
are node filters with a reason each, so fit messages say why. The score
(KAI's gpusharingorder) adds 1,000 to nodes that already have a shared group
the fractional pod fits into, so fractions fill shared devices before opening
new ones.
"""

from __future__ import annotations

import numpy as np

from crds.gpusharing import NODE_GPU_MEMORY_LABEL
from scheduler.api import gpu_sharing
from scheduler.api.pods import PodInfo
from scheduler.framework import extension_points as ep
from scheduler.framework.node_memo import per_table
from scheduler.framework.session import Session

SHARED_GROUP_SCORE = 1000.0


_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
"""The texts Go's ``strconv.ParseBool`` reads as true (KAI's reader of the MIG label)."""


def mig_strategies(session: Session) -> tuple[ep.Mask, ep.Mask, ep.Mask]:
    """(MIG single, MIG mixed, MIG-enabled) node masks.

    A node is MIG-enabled when the label ``node-role.kubernetes.io/mig-enabled`` reads as
    true for Go's ``strconv.ParseBool`` (``1``, ``t``, ``true``, ``True``, ``TRUE``, ``T``;
    any other value: not enabled), or, without that label, with any ``nvidia.com/mig-*``
    allocatable. Its strategy is the ``nvidia.com/mig.strategy`` label: ``single`` or
    ``mixed``; another value is KAI's ``none``, which restricts nothing (the node is only
    in the third mask); unlabelled, ``mixed`` when it offers MIG slices and ``single``
    otherwise (podmuster; KAI: none).
    """
    nodes = session.snapshot.nodes
    names = session.snapshot.space.names
    mig_columns = [i for i, name in enumerate(names) if gpu_sharing.is_mig_resource(name)]
    offers_mig: ep.Mask = np.zeros(len(nodes), dtype=bool)
    if mig_columns:
        offers_mig = np.asarray((nodes.allocatable[mig_columns] > 0).any(axis=0), dtype=bool)
    single = np.zeros(len(nodes), dtype=bool)
    mixed = np.zeros(len(nodes), dtype=bool)
    enabled = np.zeros(len(nodes), dtype=bool)
    for i, meta in enumerate(nodes.meta):
        label = meta.labels.get(gpu_sharing.MIG_ENABLED_LABEL)
        enabled[i] = label in _GO_TRUE if label is not None else bool(offers_mig[i])
        if not enabled[i]:
            continue
        strategy = meta.labels.get(gpu_sharing.MIG_STRATEGY_LABEL) or (
            "mixed" if offers_mig[i] else "single"
        )
        mixed[i] = strategy == "mixed"
        single[i] = strategy == "single"
    return single, mixed, enabled


class GpuSharingPlugin:
    """Registers the GPU-kind node filters and the shared-group score."""

    name = "gpusharing"

    def on_session_open(self, session: Session) -> None:
        single, mixed, mig_enabled = per_table(
            session.snapshot.nodes, "mig-strategies", lambda: mig_strategies(session)
        )
        restricted = single | mixed  # a MIG strategy of "none" restricts no request
        any_mig = bool(mig_enabled.any())
        synced = session.snapshot.nodes.shared.synced

        def node_filter(pod: PodInfo) -> list[tuple[ep.Mask, str]]:
            kind = gpu_sharing.gpu_kind(pod.constraint_key)
            parts: list[tuple[ep.Mask, str]] = []
            if kind == gpu_sharing.SHARED_KIND:
                if any_mig:
                    parts.append(
                        (~restricted, "node(s) are MIG-enabled; fractional GPUs are not offered")
                    )
                if pod.gpu_share is not None and pod.gpu_share.by_memory:
                    parts.append(
                        (
                            synced,
                            f"node(s) had no {NODE_GPU_MEMORY_LABEL} label to size a "
                            "gpu-memory request",
                        )
                    )
            elif kind == gpu_sharing.MIG_KIND:
                parts.append((mig_enabled, "node(s) are not MIG-enabled"))
                if any_mig:
                    parts.append(
                        (~single, "node(s) use the MIG single strategy (request nvidia.com/gpu)")
                    )
            elif kind == gpu_sharing.WHOLE_KIND and any_mig:
                parts.append(
                    (~mixed, "node(s) use the MIG mixed strategy (only MIG slices are offered)")
                )
            return parts

        def shared_group(context: ep.TaskContext) -> ep.Scores | None:
            if context.shared_fit is None:
                return None
            score: ep.Scores = context.shared_fit.astype(np.float64) * SHARED_GROUP_SCORE
            return score

        session.add_node_filter(node_filter)
        session.add_node_scorer(shared_group)
