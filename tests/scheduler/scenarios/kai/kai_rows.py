"""KAI v0.17's test pictures in podmuster's scenario form: conventions and the row wrapper.

Why: the tables in this directory restate the scenarios of KAI v0.17's action tests
(``pkg/scheduler/actions/*/``) as ``Disruption`` cases, so that every behaviour we share
with KAI is pinned down by a fact taken from KAI and an expectation checked by hand from
docs/semantics.md. KAI's test pictures differ from our kit's defaults in three ways,
restated here once: every queue sits under a ``default`` department with unlimited
deserved quota; CPU and memory have quota -1 and over-quota weight 1; KAI's jobs are
minutes old where the kit's are a day. A pod asks for 1 CPU and 1G memory, as in both. ``row`` names the KAI test a case comes from
and the rule it checks, and marks the rows where podmuster is known to decide otherwise
for now (``gap``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from disruption_kit import Disruption, Obj, check, rfc3339
from gpu_kit import fraction
from gpu_kit import gpu_node as labelled_gpu_node
from gpu_kit import memory as gpu_memory

from crds.gpusharing import GPU_GROUP_LABEL
from scheduler.api.gpu_sharing import MIG_ENABLED_LABEL, MIG_STRATEGY_LABEL
from tests.kits.worlds import job, pod, pod_group, queue

DEPARTMENT = "default"
NODE_TYPE_LABEL = "kai.scheduler/type"  # the label KAI's test pods select nodes by
DELAY_10M = {"preemptionDelay": "10m"}  # a PodGroup spec field KAI's tests use


def department(name: str = DEPARTMENT, **quota: Any) -> Obj:
    """KAI's test department: a top-level queue, unlimited deserved unless stated."""
    return queue(name, **{"gpu_quota": -1, **quota})


def leaf(name: str, parent: str = DEPARTMENT, **quota: Any) -> Obj:
    """A leaf queue as KAI's tests build it (CPU and memory: quota -1, weight 1)."""
    return queue(name, parent, **{"cpu_weight": 1, "memory_weight": 1, **quota})


def gjob(
    name: str,
    queue_name: str,
    tasks: int = 1,
    *,
    gpus: float = 0,
    spec: Mapping[str, Any] | None = None,
    age: float | None = None,
    gpu_group: str | None = None,
    **args: Any,
) -> list[Obj]:
    """``job`` with KAI's GPU requests, PodGroup spec fields and age.

    A fractional ``gpus`` is asked for with the ``gpu-fraction`` annotation, and a
    running fraction holds a device of its own (one shared group per job) unless
    ``gpu_group`` names a group it shares with another job. ``spec``
    adds PodGroup spec fields; ``age`` dates the PodGroup that many seconds before the
    cycle (KAI's test jobs are minutes old, the kit's a day).
    """
    if gpus and gpus != int(gpus):
        running_ = any(state != "Pending" for state in args.get("states") or ())
        sharing = shared_gpu(gpus, (gpu_group or f"{name}-group") if running_ else None)
        args["annotations"] = {**args.get("annotations", {}), **sharing["annotations"]}
        args["labels"] = {**args.get("labels", {}), **sharing.get("labels", {})}
    else:
        args["gpus"] = gpus
    objects = job(name, queue_name, tasks, **args)
    group = objects[0]
    if spec:
        group = {**group, "spec": {**group["spec"], **spec}}
    if age is not None:
        group = {**group, "metadata": {**group["metadata"], "creationTimestamp": rfc3339(age)}}
    return [group, *objects[1:]]


def subgroup_job(
    name: str,
    queue_name: str,
    pod_sets: Mapping[str, int],
    pods: Sequence[tuple[str, float] | tuple[str, float, str]],
    **group_args: Any,
) -> list[Obj]:
    """A PodGroup of flat pod sets (name -> minMember) and pods ``<name>-<i>``.

    Each pod is ``(pod set, GPUs)`` while pending or ``(pod set, GPUs, node)`` while
    running there.
    """
    sets = [{"name": set_name, "minMember": size} for set_name, size in pod_sets.items()]
    out = [pod_group(name, queue_name, min_member=None, sub_groups=sets, **group_args)]
    for i, (pod_set, gpus, *where) in enumerate(pods):
        state = {"state": "Running", "node": where[0]} if where else {}
        out += pod(f"{name}-{i}", name, gpus=gpus, sub_group=pod_set, **state)
    return out


def shared_gpu(
    portion: float | None = None,
    group: str | None = None,
    *,
    memory: int | None = None,
    devices: int | None = None,
) -> dict[str, Any]:
    """``pod`` arguments asking for ``portion`` of a GPU (or ``memory`` MiB of one) on
    each of ``devices`` devices, held in shared ``group`` if given."""
    if memory is not None:
        amount = gpu_memory(memory, devices)
    else:
        assert portion is not None, "ask for a portion or for memory"
        amount = fraction(portion, devices)
    out: dict[str, Any] = {"annotations": amount}
    if group is not None:
        out["labels"] = {GPU_GROUP_LABEL: group}
    return out


def gpu_node(name: str, gpus: int, device_memory: int = 100, **node_args: Any) -> Obj:
    """A GPU node labelled with its device memory, 100 MiB unless stated (KAI's test nodes)."""
    return labelled_gpu_node(name, gpus, device_memory=device_memory, **node_args)


def mig_labels(strategy: str) -> dict[str, str]:
    """The labels of a MIG-enabled node with ``strategy`` (``mixed`` or ``single``)."""
    return {MIG_STRATEGY_LABEL: strategy, MIG_ENABLED_LABEL: "true"}


def type_in(*values: str) -> dict[str, Any]:
    """Required node affinity on KAI's test node label ``kai.scheduler/type`` (In ``values``)."""
    term = {
        "matchExpressions": [{"key": NODE_TYPE_LABEL, "operator": "In", "values": list(values)}]
    }
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def row(kai_test: str, rule: str, case: Disruption, gap: str | None = None) -> Any:
    """One table row: the KAI test's name, the rule in one line, and the case.

    ``gap`` marks a row whose expectation is KAI's while podmuster still decides
    otherwise (``"issue 17 item N: ..."`` for work under way, else a reported
    difference); the row must fail until the gap is closed.
    """
    assert kai_test, "every row names its KAI test"
    assert rule, "every row states the rule it checks"
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(case, id=case.name, marks=marks)


__all__ = [
    "DELAY_10M",
    "NODE_TYPE_LABEL",
    "Disruption",
    "check",
    "department",
    "gjob",
    "leaf",
    "row",
    "shared_gpu",
]
