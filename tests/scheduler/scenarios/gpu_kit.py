"""A scenario kit for fractional GPUs and MIG (docs/semantics.md §6).

Why: GPU-sharing rules are about *which device* a pod lands on, not only
which node: ``GpuCase`` adds to the disruption kit's expectations the shared
groups of the placed pods (pods given the same letter must share one group,
different letters must not; ``=id`` names an existing group) and their
portions. The builders write the annotations and labels a user, the binder
and the GPU operator would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from disruption_kit import Disruption, problems
from disruption_kit import run as run_case

from scheduler.api.resources import GPU_UNIT
from scheduler.cycle import CycleResult
from tests.kits.worlds import Item, describe_result, job, node

Obj = dict[str, Any]


def fraction(value: float, devices: int | None = None) -> dict[str, str]:
    """The ``gpu-fraction`` annotation (and ``gpu-fraction-num-devices``)."""
    out = {"gpu-fraction": f"{value:g}"}
    if devices is not None:
        out["gpu-fraction-num-devices"] = str(devices)
    return out


def memory(mib: int, devices: int | None = None) -> dict[str, str]:
    """The ``gpu-memory`` annotation, in MiB."""
    out = {"gpu-memory": str(mib)}
    if devices is not None:
        out["gpu-fraction-num-devices"] = str(devices)
    return out


def gpu_node(name: str, gpus: int, *, device_memory: int | None = 40000, **node_args: Any) -> Obj:
    """A GPU node labelled with its device memory (``None``: no label, as before GPU discovery)."""
    labels = dict(node_args.pop("labels", {}) or {})
    if device_memory is not None:
        labels["nvidia.com/gpu.memory"] = str(device_memory)
    return node(name, gpus=gpus, labels=labels, **node_args)


def shared(
    name: str,
    queue: str,
    where: str,
    value: float,
    group: str | Sequence[str],
    *,
    state: str = "Running",
    **job_args: Any,
) -> list[Obj]:
    """A one-pod job holding ``value`` of a GPU in shared ``group`` on ``where`` (as bound)."""
    groups = [group] if isinstance(group, str) else list(group)
    labels = (
        {"runai-gpu-group": groups[0]}
        if len(groups) == 1
        else {f"runai-gpu-group/{g}": g for g in groups}
    )
    devices = None if len(groups) == 1 else len(groups)
    return job(
        name,
        queue,
        annotations=fraction(value, devices),
        labels=labels,
        states=[state],
        nodes=[where],
        **job_args,
    )


def reservation(
    group: str, where: str, *, state: str = "Running", namespace: str = "kai-resource-reservation"
) -> list[Obj]:
    """The binder's reservation pod for ``group`` on ``where`` (one whole GPU, not ours)."""
    from tests.kits.worlds import pod

    return pod(
        f"gpu-reservation-{group}",
        namespace=namespace,
        gpus=1,
        cpu="2m",
        memory="20M",
        state=state,
        node=where,
        labels={"app": "kai-resource-reservation", "runai-gpu-group": group},
        scheduler_name="default-scheduler",
    )


@dataclass(frozen=True)
class GpuCase:
    """A cluster picture and what one cycle must decide, down to the shared devices.

    ``groups`` maps a placed pod to a letter per device (pods sharing a letter
    share the group; ``=id`` is the existing group ``id``); ``portions`` maps a
    placed pod to its portion per device (0.5). Other fields as ``Disruption``.
    """

    name: str
    objects: Sequence[Item]
    actions: tuple[str, ...] = ("allocate",)
    binds: Mapping[str, str] = field(default_factory=dict)
    pipelined: Mapping[str, str] = field(default_factory=dict)
    evicted: Sequence[str] = ()
    pending: Sequence[str] = ()
    reasons: Mapping[str, Sequence[str]] = field(default_factory=dict)
    groups: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    portions: Mapping[str, float] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name

    def disruption(self) -> Disruption:
        return Disruption(
            self.name,
            self.objects,
            self.actions,
            evicted=self.evicted,
            pipelined=self.pipelined,
            binds=self.binds,
            pending=self.pending,
            reasons=self.reasons,
            evicted_by=None if len(self.actions) != 1 else self.actions[0],
            settings=self.settings,
        )


def _placed(result: CycleResult) -> dict[str, tuple[tuple[str, ...], int]]:
    return {
        b.pod.removeprefix("default/"): (b.gpu_groups, b.gpu_portion)
        for b in [*result.binds, *result.pipelined]
    }


def group_problems(case: GpuCase, result: CycleResult) -> list[str]:
    """Differences in shared groups and portions."""
    out: list[str] = []
    placed = _placed(result)
    letters: dict[str, str] = {}
    for pod_name, wanted in case.groups.items():
        wanted_list = [wanted] if isinstance(wanted, str) else list(wanted)
        got = placed.get(pod_name, ((), 0))[0]
        if len(got) != len(wanted_list):
            out.append(f"groups of {pod_name}: expected {wanted_list}, got {list(got)}")
            continue
        for letter, gid in zip(wanted_list, got, strict=True):
            if letter.startswith("="):
                if gid != letter[1:]:
                    out.append(f"group of {pod_name}: expected {letter[1:]}, got {gid}")
            elif letters.setdefault(letter, gid) != gid:
                out.append(f"group {letter!r} of {pod_name}: {gid} differs from {letters[letter]}")
    for letter, gid in letters.items():
        others = [other for other, g in letters.items() if g == gid and other != letter]
        if others:
            out.append(f"groups {letter!r} and {others} are the same device {gid}")
    for pod_name, portion in case.portions.items():
        got_portion = placed.get(pod_name, ((), 0))[1] / GPU_UNIT
        if abs(got_portion - portion) > 1e-9:
            out.append(f"portion of {pod_name}: expected {portion}, got {got_portion}")
    return out


def check(case: GpuCase) -> CycleResult:
    """Run the case and assert every expectation, with a readable report on failure."""
    result = run_case(case.disruption())
    found = problems(case.disruption(), result) + group_problems(case, result)
    if found:
        placed = [
            f"  {pod}: {groups} portion {portion}"
            for pod, (groups, portion) in _placed(result).items()
        ]
        evictions = [f"  {e.pod} by {e.action}" for e in result.evictions]
        raise AssertionError(
            "\n".join(
                [
                    f"case {case.name!r} differs:",
                    *found,
                    "",
                    describe_result(result),
                    "devices:",
                    *placed,
                    "evictions:",
                    *evictions,
                ]
            )
        )
    return result


__all__ = ["GpuCase", "check", "fraction", "gpu_node", "memory", "reservation", "shared"]
