"""Node pools (KAI scheduling shards): which objects one scheduler instance owns.

Why this module exists: KAI shards a cluster by one node label (``kai.scheduler/node-pool``
by default).  A scheduler started for pool ``a`` sees the Nodes, Queues, PodGroups and
BindRequests labelled ``kai.scheduler/node-pool=a``; a scheduler started without a pool
sees only the objects WITHOUT the label (the default shard).  Pods are never filtered:
every pod running on a pool's node uses room there, whatever its own labels, and a
pending pod is only scheduled through its PodGroup, which is filtered.  The filter is
applied where objects enter the cache (:class:`~scheduler.live.informers.Informers`),
never inside the engine, so the cycle stays a pure function of what it was given.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from crds import metadata as object_metadata
from crds.errors import InputError
from crds.names import NODE_POOL_LABEL

POOLED_KINDS: Final = frozenset({"Node", "Queue", "PodGroup", "BindRequest"})
"""Kinds kept only when their node-pool label matches the instance's pool."""

_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_LEASE = "podmuster-scheduler"


@dataclass(frozen=True, slots=True)
class NodePool:
    """One shard: ``name`` None is the default pool (objects without ``label``)."""

    name: str | None = None
    label: str = NODE_POOL_LABEL

    def holds(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` belongs to this instance (pods always do).

        An object whose labels cannot be read (not a map of strings, or ``metadata`` not
        a map) is held by every instance, whatever its pool: the cache's reader then
        reports it as the error it is, naming the object and the field, and leaves it
        out. Taken as unlabelled, such a node vanished from its pool's scheduler without
        a word and was the default pool's."""
        if str(obj.get("kind") or "") not in POOLED_KINDS:
            return True
        try:
            labels = object_metadata.metadata_map(obj, "labels")
        except InputError:
            return True
        value = labels.get(self.label)
        if self.name is None:
            return value is None
        return value == self.name

    @property
    def lease_name(self) -> str:
        """The leader-election Lease: one per pool, so two pools never share one.

        A label value may hold capitals, ``_`` and ``.``; an object name may not (the
        Lease, and the chart's Deployment and Service of the pool's scheduler), so the
        pool's name is lowered and those become ``-`` (:func:`pool_slug`).
        """
        return _LEASE if self.name is None else f"{_LEASE}-{pool_slug(self.name)}"

    @property
    def selector(self) -> str:
        """The same filter as a Kubernetes label selector (for list/watch)."""
        return f"!{self.label}" if self.name is None else f"{self.label}={self.name}"


def pool_slug(name: str) -> str:
    """A pool's name as part of an object name (the chart computes the same)."""
    return name.lower().replace("_", "-").replace(".", "-")


def pool_name(value: str) -> str:
    """``--node-pool``: a label value (63 characters, alphanumerics, ``-_.`` inside)."""
    if not _LABEL_VALUE.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a label value (at most 63 characters: alphanumerics, "
            "with '-', '_' or '.' inside)"
        )
    return value


SCHEDULE_POOL_HELP: Final = (
    "schedule only this node pool: nodes, queues and pod groups labelled "
    "--node-pool-label=NAME (default: the objects without that label)"
)
SHOW_POOL_HELP: Final = (
    "show what this node pool's scheduler sees: nodes, queues and pod groups labelled "
    "--node-pool-label=NAME (default: the objects without that label)"
)


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    node_pool_help: str = SCHEDULE_POOL_HELP,
) -> None:
    """``--node-pool`` and ``--node-pool-label``; ``node_pool_help``: what the command does
    with the pool (a scheduler schedules it, a viewer shows that scheduler's view)."""
    parser.add_argument(
        "--node-pool",
        type=pool_name,
        default=None,
        help=node_pool_help,
    )
    parser.add_argument(
        "--node-pool-label",
        default=NODE_POOL_LABEL,
        help=f"the node-pool label key (default {NODE_POOL_LABEL})",
    )


def from_arguments(args: argparse.Namespace) -> NodePool:
    return NodePool(
        getattr(args, "node_pool", None), getattr(args, "node_pool_label", NODE_POOL_LABEL)
    )
