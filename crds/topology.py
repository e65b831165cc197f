"""Topology (``kai.scheduler/v1alpha1``, cluster-scoped): node-label levels for placement.

``spec.levels`` lists node-label keys from the coarsest level (e.g. a block) to
the finest (usually ``kubernetes.io/hostname``). A node missing any level label
is not part of the topology. A level may carry an ``alias`` (KAI v0.17), a short
name a workload's ``requiredTopologyLevel`` / ``preferredTopologyLevel`` may use
instead of the label key.

The CRD's CEL rules (the node labels are immutable while aliases may change,
entries are unique, :data:`HOSTNAME_LABEL` only as the last level) are enforced
by the apiserver; the model checks the two that need no previous version, so
offline snapshots get the same errors. It also checks the alias rules KAI's
validating webhook applies (aliases unique, no alias equal to a level's node
label), so a Topology whose level names would be ambiguous is never read. These
rules between levels are :func:`level_problems`, each at its own field; the
snapshot reader and the admission webhook report them so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Final, Literal, Self

from pydantic import Field, ValidationInfo, model_validator

from crds.meta import CelRule, KaiModel, ListType, ObjectMeta

__all__ = [
    "API_VERSION",
    "HOSTNAME_LABEL",
    "KIND",
    "LABEL_KEY_PATTERN",
    "LEVELS_CHECKED_BY_CALLER",
    "MAX_LEVELS",
    "Topology",
    "TopologyLevel",
    "TopologySpec",
    "level_problems",
]

API_VERSION: Final = "kai.scheduler/v1alpha1"
KIND: Final = "Topology"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
MAX_LEVELS: Final = 16

LEVELS_CHECKED_BY_CALLER: Final = "topology-levels-checked-by-caller"
"""A validation context key: when true, the model leaves :func:`level_problems` to its
caller, which reports every problem at its own field (the admission webhook)."""

LABEL_KEY_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
"""Label-key syntax: optional DNS-subdomain prefix and ``/``, then a name."""

NodeLabel = Annotated[str, Field(min_length=1, max_length=316, pattern=LABEL_KEY_PATTERN)]


class TopologyLevel(KaiModel):
    node_label: NodeLabel
    """Node-label key of this level, e.g. cloud.example.com/rack."""
    alias: NodeLabel | None = None
    """Short name a topology constraint may use in place of nodeLabel, e.g. rack."""


class TopologySpec(KaiModel):
    levels: Annotated[
        list[TopologyLevel],
        ListType("atomic"),
        CelRule(
            "self.map(l, l.nodeLabel) == oldSelf.map(l, l.nodeLabel)",
            "nodeLabel structure is immutable; only aliases may be edited",
        ),
        CelRule(
            "self.all(a, self.exists_one(b, b.nodeLabel == a.nodeLabel))", "levels must be unique"
        ),
        CelRule(
            f"!self.exists(l, l.nodeLabel == '{HOSTNAME_LABEL}') || "
            f"self[size(self) - 1].nodeLabel == '{HOSTNAME_LABEL}'",
            f"the {HOSTNAME_LABEL} label can only be used at the lowest level",
        ),
    ] = Field(min_length=1, max_length=MAX_LEVELS)
    """Topology levels, coarsest first."""

    @model_validator(mode="after")
    def _check_levels(self, info: ValidationInfo) -> Self:
        if not (info.context or {}).get(LEVELS_CHECKED_BY_CALLER):
            for field, message in level_problems(self.levels)[:1]:
                raise ValueError(f"{field}: {message}")
        return self

    def aliases(self) -> dict[str, str]:
        """Each level alias and the node-label key it stands for."""
        return {level.alias: level.node_label for level in self.levels if level.alias is not None}

    def node_labels(self) -> list[str]:
        """The level label keys, coarsest first."""
        return [level.node_label for level in self.levels]


def level_problems(levels: Sequence[TopologyLevel]) -> list[tuple[str, str]]:
    """``(field under spec, message)`` of every broken rule between levels.

    The node labels are unique and :data:`HOSTNAME_LABEL` is only the last one (the
    CRD's CEL rules); the aliases are unique and none is a level's node label (KAI's
    validating webhook). Empty when the levels are acceptable.
    """
    problems: list[tuple[str, str]] = []
    labels = [level.node_label for level in levels]
    for index, label in enumerate(labels):
        if label in labels[:index]:
            first = labels.index(label)
            problems.append(
                (f"levels[{index}].nodeLabel", f"duplicate level {label!r} (levels[{first}])")
            )
        if label == HOSTNAME_LABEL and index != len(labels) - 1:
            problems.append((f"levels[{index}].nodeLabel", f"{label} may only be the last level"))
    aliases: list[str | None] = [level.alias for level in levels]
    for index, alias in enumerate(aliases):
        if alias is None:
            continue
        if alias in aliases[:index]:
            first = aliases.index(alias)
            problems.append(
                (f"levels[{index}].alias", f"{alias!r} is the alias of levels[{first}] too")
            )
        if alias in labels:
            problems.append(
                (
                    f"levels[{index}].alias",
                    f"{alias!r} is the nodeLabel of levels[{labels.index(alias)}];"
                    " an alias must not equal a nodeLabel",
                )
            )
    return problems


class Topology(KaiModel):
    """A KAI Topology object (no status)."""

    api_version: Literal["kai.scheduler/v1alpha1"] = API_VERSION
    """APIVersion of this object."""
    kind: Literal["Topology"] = KIND
    """Kind of this object."""
    metadata: ObjectMeta
    spec: TopologySpec
    """The levels of the topology."""
