"""Offline synthesis of Grove: what Grove's operator creates for a PodCliqueSet.

Why this module exists: ``podmuster group`` on a PodCliqueSet manifest must show the
PodGroups KAI would make, and those are read from PodGangs, which Grove's operator
writes.  Per PodCliqueSet replica *r* (``spec.replicas``, default 0 as in Grove's
schema) it creates:

* a PodClique ``<pcs>-<r>-<clique>`` per clique in no scaling group, owned by the
  PodCliqueSet, with ``replicas`` pods (default 1) of which ``minAvailable`` (default
  ``replicas``) must run together;
* a PodCliqueScalingGroup ``<pcs>-<r>-<group>`` per ``podCliqueScalingGroups`` entry
  (``replicas`` and ``minAvailable`` default 1) and, per scaling-group replica *j*, a
  PodClique ``<pcs>-<r>-<group>-<j>-<clique>`` for each of its ``cliqueNames``;
* the base PodGang ``<pcs>-<r>``: the standalone PodCliques and the scaling-group
  replicas below ``minAvailable`` (each such replica also a
  ``topologyConstraintGroupConfigs`` entry ``<pcs>-<r>-<group>-<j>`` naming its
  PodCliques); a scaled PodGang ``<pcs>-<r>-<group>-<j - minAvailable>`` per replica
  beyond it.  PodGangs carry the PodCliqueSet's labels and annotations and its
  template's ``priorityClassName``;
* pods ``<podclique>-<x>`` labelled ``grove.io/podgang`` and ``grove.io/podclique``.

Grove translates topology pack domains into node-label keys from a ClusterTopology
that offline grouping does not have: they are left out, with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from integrations import base, fields, grove, templates

GROVE_API_VERSION = "grove.io/v1alpha1"
PODCLIQUE_LABEL = "grove.io/podclique"
PART_OF_LABEL = "app.kubernetes.io/part-of"
REPLICA_INDEX_LABEL = "grove.io/podcliqueset-replica-index"


@dataclass(slots=True)
class _Gang:
    """One PodGang being assembled: its podgroups and topology group configs."""

    name: str
    podgroups: list[dict[str, Any]] = field(default_factory=list)
    group_configs: list[dict[str, Any]] = field(default_factory=list)


def _cliques(pcs: base.RawObject) -> dict[str, tuple[int, Mapping[str, Any]]]:
    result: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for index, clique in enumerate(fields.get_list(pcs, "spec.template.cliques")):
        path = f"spec.template.cliques[{index}].name"
        name = clique.get("name") if isinstance(clique, Mapping) else None
        if not isinstance(name, str) or not name:
            raise base.GroupingError(fields.describe(pcs), path, "is required")
        result[name] = (index, clique)
    return result


def _clique_replicas(pcs: base.RawObject, clique: tuple[int, Mapping[str, Any]]) -> int:
    """A PodClique's pods: its ``replicas`` (default 1)."""
    index, body = clique
    path = f"spec.template.cliques[{index}].spec.replicas"
    return templates.count(pcs, fields.get_mapping(body, "spec").get("replicas") or None, path)


def _pods_per_replica(
    pcs: base.RawObject,
    cliques: Mapping[str, tuple[int, Mapping[str, Any]]],
    configs: Sequence[Any],
    in_groups: set[str],
) -> int:
    """The pods of one PodCliqueSet replica: its standalone cliques' and, per scaling
    group, ``replicas`` times its cliques' (the shape :func:`_scaling_group` checks)."""
    total = sum(_clique_replicas(pcs, c) for name, c in cliques.items() if name not in in_groups)
    for index, config in enumerate(configs):
        if not isinstance(config, Mapping):
            continue
        names = config.get("cliqueNames") or []
        members = [cliques[m] for m in names if isinstance(m, str) and m in cliques]
        at = f"spec.template.podCliqueScalingGroups[{index}].replicas"
        replicas = templates.count(pcs, config.get("replicas"), at)
        total += replicas * sum(_clique_replicas(pcs, member) for member in members)
    return total


def _clique_pods(
    pcs: base.RawObject,
    owner: base.RawObject,
    fqn: str,
    clique: tuple[int, Mapping[str, Any]],
    gang: _Gang,
    replica: int,
) -> list[dict[str, Any]]:
    """The PodClique ``fqn`` (owned by ``owner``) and its pods, entered into ``gang``."""
    index, body = clique
    path = f"spec.template.cliques[{index}].spec."
    spec = fields.get_mapping(body, "spec")
    replicas = _clique_replicas(pcs, clique)
    minimum = fields.get_int(pcs, "minAvailable", replicas, within=spec, prefix=path, minimum=1)
    at = f"spec.template.cliques[{index}]."
    labels = {**fields.get_string_map(pcs, "labels", within=body, prefix=at), PODCLIQUE_LABEL: fqn}
    annotations = dict(fields.get_string_map(pcs, "annotations", within=body, prefix=at))
    shared = {
        grove.PODGANG_LABEL: gang.name,
        PART_OF_LABEL: fields.name(pcs),
        REPLICA_INDEX_LABEL: str(replica),
    }
    podclique = templates.make_object(
        GROVE_API_VERSION,
        "PodClique",
        fqn,
        owner,
        labels={**labels, **shared},
        annotations=annotations,
        spec=spec,
    )
    template = {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": spec.get("podSpec") or {},
    }
    pods = [
        templates.make_pod(
            template,
            templates.generated_name(fqn, f"{fields.uid(podclique)}/{i}"),
            podclique,
            labels={**shared, "grove.io/podclique-pod-index": str(i)},
        )
        for i in range(replicas)
    ]
    gang.podgroups.append(
        {
            "name": fqn,
            "minReplicas": minimum,
            "podReferences": [
                {"namespace": fields.namespace(p), "name": fields.name(p)} for p in pods
            ],
        }
    )
    return [podclique, *pods]


def _podgang(pcs: base.RawObject, gang: _Gang) -> dict[str, Any]:
    spec: dict[str, Any] = {"podgroups": gang.podgroups}
    if gang.group_configs:
        spec["topologyConstraintGroupConfigs"] = gang.group_configs
    priority = fields.get(pcs, "spec.template.priorityClassName")
    if isinstance(priority, str) and priority:
        spec["priorityClassName"] = priority
    return templates.make_object(
        grove.PODGANG_API_VERSION,
        grove.PODGANG_KIND,
        gang.name,
        pcs,
        labels=fields.labels(pcs),
        annotations=fields.annotations_of(pcs),
        spec=spec,
    )


def _scaling_group(
    pcs: base.RawObject,
    index: int,
    config: Any,
    cliques: Mapping[str, tuple[int, Mapping[str, Any]]],
    replica: int,
    base_gang: _Gang,
) -> tuple[list[dict[str, Any]], list[_Gang]]:
    """A PodCliqueScalingGroup's objects; replicas past ``minAvailable`` get own gangs."""
    path = f"spec.template.podCliqueScalingGroups[{index}]."
    if not isinstance(config, Mapping):
        raise base.GroupingError(fields.describe(pcs), path[:-1], "must be an object")
    name = config.get("name")
    if not isinstance(name, str) or not name:
        raise base.GroupingError(fields.describe(pcs), f"{path}name", "is required")
    members = config.get("cliqueNames") or []
    for member in members:
        if member not in cliques:
            raise base.GroupingError(
                fields.describe(pcs), f"{path}cliqueNames", f"names no clique {member!r}"
            )
    replicas = templates.count(pcs, config.get("replicas"), f"{path}replicas")
    minimum = fields.get_int(pcs, "minAvailable", 1, within=config, prefix=path, minimum=1)
    assert minimum is not None
    fqn = f"{fields.name(pcs)}-{replica}-{name}"
    group_obj = templates.make_object(
        GROVE_API_VERSION,
        "PodCliqueScalingGroup",
        fqn,
        pcs,
        spec={"replicas": replicas, "minAvailable": minimum, "cliqueNames": list(members)},
    )
    created: list[dict[str, Any]] = [group_obj]
    scaled: list[_Gang] = []
    for j in range(replicas):
        gang = base_gang if j < minimum else _Gang(f"{fqn}-{j - minimum}")
        names = [f"{fqn}-{j}-{member}" for member in members]
        for member, clique_fqn in zip(members, names, strict=True):
            created.extend(_clique_pods(pcs, group_obj, clique_fqn, cliques[member], gang, replica))
        if j < minimum:
            gang.group_configs.append({"name": f"{fqn}-{j}", "podGroupNames": names})
        else:
            scaled.append(gang)
    return created, scaled


def _has_topology(pcs: base.RawObject, cliques: Sequence[Any], groups: Sequence[Any]) -> bool:
    items = [fields.get_mapping(pcs, "spec.template"), *cliques, *groups]
    return any(isinstance(i, Mapping) and i.get("topologyConstraint") for i in items)


def synthesize_podcliqueset(
    pcs: base.RawObject, _expand: templates.Expand, *, warn: templates.Warn
) -> list[dict[str, Any]]:
    """What Grove's operator creates for ``pcs`` (module docstring), in creation order."""
    cliques = _cliques(pcs)
    configs = fields.get_list(pcs, "spec.template.podCliqueScalingGroups")
    in_groups = {
        str(m) for c in configs if isinstance(c, Mapping) for m in c.get("cliqueNames") or []
    }
    if _has_topology(pcs, fields.get_list(pcs, "spec.template.cliques"), configs):
        warn(
            base.GroupingWarning(
                fields.describe(pcs),
                "spec.template.topologyConstraint",
                "Grove turns pack domains into node-label keys from its ClusterTopology,"
                " which offline grouping does not have: the PodGroups are shown without them",
            )
        )
    result: list[dict[str, Any]] = []
    replicas = templates.count(pcs, fields.get(pcs, "spec.replicas"), "spec.replicas", default=0)
    if replicas:
        templates.expect_pods(replicas * _pods_per_replica(pcs, cliques, configs, in_groups))
    for replica in range(replicas):
        base_gang = _Gang(f"{fields.name(pcs)}-{replica}")
        scaled: list[_Gang] = []
        objs: list[dict[str, Any]] = []
        for name, clique in cliques.items():
            if name not in in_groups:
                fqn = f"{fields.name(pcs)}-{replica}-{name}"
                objs.extend(_clique_pods(pcs, pcs, fqn, clique, base_gang, replica))
        for index, config in enumerate(configs):
            created, extra = _scaling_group(pcs, index, config, cliques, replica, base_gang)
            objs.extend(created)
            scaled.extend(extra)
        result.append(_podgang(pcs, base_gang))
        result.extend(_podgang(pcs, gang) for gang in scaled)
        result.extend(objs)
    return result


def synthesize_dynamo(
    dgd: base.RawObject, _expand: templates.Expand, *, warn: templates.Warn
) -> list[dict[str, Any]]:
    """Nothing: the Dynamo operator's rendering is not known offline (a warning says so)."""
    warn(
        base.GroupingWarning(
            fields.describe(dgd),
            "",
            "the Dynamo operator renders a DynamoGraphDeployment into a Grove PodCliqueSet"
            " (which podmuster groups, with this object's labels and annotations filling"
            " gaps); give that PodCliqueSet, owned by this object, to see its PodGroups",
        )
    )
    return []
