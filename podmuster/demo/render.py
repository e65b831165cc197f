"""The demo's output: a readable timeline and summary, or the same facts as JSON.

Why: the demo is read by people meeting KAI's ideas for the first time, so
the text names the rule behind every decision in plain words; the JSON form
carries the same facts (and the engine's own reason text) for tests and
scripts.
"""

from __future__ import annotations

import re
from typing import Any

from podmuster.demo import cluster
from podmuster.demo.podgrouping import PodGroupView
from podmuster.demo.timeline import DemoRun, GroupedEvent, Progress, QueueRow, Step

_COLORS = {"start": "32", "wait": "33", "finish": "2", "title": "1"}


class Painter:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, kind: str, text: str) -> str:
        return f"\033[{_COLORS[kind]}m{text}\033[0m" if self.color else text


def _limit(value: float) -> str:
    return "-" if value < 0 else f"{value:g}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _indent(row: QueueRow) -> str:
    return ("  " if row.parent else "") + row.name


_UID = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def short(pod_group: str) -> str:
    """A PodGroup name with its trailing uid cut to 4 hex digits: ``pg-ray-vision-60ae...``."""
    return _UID.sub(lambda m: f"-{m.group(1)[:4]}...", pod_group)


def _gang(view: PodGroupView) -> str:
    parts = ", ".join(f"{name} {size}" for name, size in view.subgroups)
    return f"minMember {view.min_member}" + (f" ({parts})" if parts else "")


def grouping_line(event: GroupedEvent) -> str:
    """One line: what the podgrouper made of an arriving or rescaled workload."""
    what = f"{event.kind} {event.namespace}/{event.workload}"
    views = event.pod_groups
    if event.rescale is not None:
        group, old, new = event.rescale
        view = views[0]
        return (
            f"autoscaler: {event.workload} {group} {old} -> {new} replicas; {event.new_pods} pods "
            f"join {short(view.name)}, minMember stays {view.min_member}"
        )
    if len(views) == 1:
        view = views[0]
        return f"{what} -> {short(view.name)}: {_gang(view)}, {view.priority}"
    sizes = sorted({v.min_member for v in views})
    each = (
        f"minMember {sizes[0]} each"
        if len(sizes) == 1
        else "minMember " + "/".join(map(str, sizes))
    )
    return f"{what} -> {len(views)} PodGroups, one per pod, {each}, {views[0].priority}"


def peak(run: DemoRun) -> Step:
    """The step with the most GPUs requested: where fair share matters most."""
    return max(
        run.steps, key=lambda s: (sum(r.requested for r in s.queues if not r.parent), -s.minute)
    )


def _status(item: Progress) -> str:
    if item.finished_at is not None:
        return f"finished at t={item.finished_at}m"
    if item.started_at is not None:
        return "running"
    return "waiting"


def text(run: DemoRun, color: bool = False) -> str:
    paint = Painter(color)
    gpus = len(cluster.NODES) * cluster.GPUS_PER_NODE
    lines = [
        paint(
            "title",
            "podmuster demo: real manifests, grouped by the podgrouper's adapters,"
            " scheduled by the engine",
        ),
        f"{len(cluster.NODES)} nodes x {cluster.GPUS_PER_NODE} GPUs = {gpus} GPUs; "
        "2 departments with 2 teams each; bin-packing placement.",
    ]
    skipped = run.steps[0].skipped_actions if run.steps else []
    if skipped:
        lines.append(f"Actions: allocate (not in this version yet: {', '.join(skipped)}).")
    else:
        lines.append(
            "Actions each cycle: allocate, consolidation, reclaim, preempt, stalegangeviction."
        )
    lines += [
        "",
        paint("title", "Timeline") + "  (workload -> the PodGroups the podgrouper made of it)",
    ]
    for step in run.steps:
        lines += _step_lines(step, run, paint)
    lines += [
        "",
        paint("title", f"Queues at t={peak(run).minute}m, when the most was asked (GPUs)"),
    ]
    lines.append(
        f"  {'queue':<18} {'deserved':>8} {'limit':>6} {'weight':>6} {'fair share':>10}"
        f" {'allocated':>9} {'requested':>9}"
    )
    for row in peak(run).queues:
        lines.append(
            f"  {_indent(row):<18} {row.deserved:>8g} {_limit(row.limit):>6} {row.weight:>6g}"
            f" {row.fair_share:>10g} {row.allocated:>9g} {row.requested:>9g}"
        )
    lines += ["", paint("title", "Who got what")]
    for item in run.workloads:
        w = item.workload
        if item.started_at is None:
            why = item.last_wait.plain if item.last_wait else "no reason reported"
            outcome = paint("wait", f"still waiting: {why}")
        else:
            waited = item.started_at - w.arrives
            outcome = f"started t={item.started_at}m"
            if waited:
                outcome += f" after {waited}m ({', '.join(item.wait_codes)})"
            outcome += f", {_status(item)}"
        lines.append(f"  {w.name:<15} {w.queue:<16} {outcome}")
    return "\n".join(lines) + "\n"


def _step_lines(step: Step, run: DemoRun, paint: Painter) -> list[str]:
    by_name = {item.workload.name: item.workload for item in run.workloads}
    index = run.steps.index(step)
    previous: dict[str, set[str]] = {}
    for earlier in run.steps[:index]:
        for w in earlier.waiting:
            previous.setdefault(w.workload, set()).add(w.code)
    head = f"t={step.minute}m"
    events = []
    if step.finished:
        events.append(paint("finish", f"finished: {', '.join(step.finished)}"))
    if step.arrived:
        events.append(f"arrived: {_count(len(step.arrived), 'workload')}")
    out = [f"{head:<6} " + "; ".join(events)]
    out += [f"  {grouping_line(event)}" for event in step.grouped]
    for s in step.started:
        where = ", ".join(n.removeprefix("gpu-") for n in s.nodes)
        placed = f"{_count(s.pods, 'pod')}, {_count(s.gpus, 'GPU')} on {where}"
        if s.grew:
            out.append("  " + paint("start", f"grow  {s.workload}") + f": {placed}")
            out.append(f"      {s.extras} elastic extras beyond the gang, placed one per pop")
            continue
        extras = f" (gang + {s.extras} elastic extras)" if s.extras else ""
        out.append("  " + paint("start", f"start {s.workload}") + f": {placed}{extras}")
        out.append(f"      {by_name[s.workload].shows}")
    for wait in step.waiting:
        again = wait.code in previous.get(wait.workload, ())
        note = " (still)" if again else ""
        out.append("  " + paint("wait", f"wait  {wait.workload}: {wait.code}{note}"))
        if not again:
            out.append(f"      {wait.plain}")
    used = "  ".join(
        f"{n.removeprefix('gpu-')} {g}/{cluster.GPUS_PER_NODE}" for n, g in step.gpus_in_use.items()
    )
    out.append(f"  GPUs in use: {used}")
    return out


def summary(run: DemoRun) -> dict[str, Any]:
    """The JSON document of ``podmuster demo -o json``."""
    return {
        "cluster": {
            "nodes": list(cluster.NODES),
            "gpusPerNode": cluster.GPUS_PER_NODE,
            "skippedActions": run.steps[0].skipped_actions if run.steps else [],
        },
        "timeline": [
            {
                "minute": step.minute,
                "arrived": step.arrived,
                "grouped": [_grouped(event) for event in step.grouped],
                "finished": step.finished,
                "started": [
                    {
                        "workload": s.workload,
                        "pods": s.pods,
                        "gpus": s.gpus,
                        "nodes": list(s.nodes),
                        "elasticExtras": s.extras,
                        "grew": s.grew,
                    }
                    for s in step.started
                ],
                "waiting": [
                    {"workload": w.workload, "reason": w.code, "plain": w.plain, "detail": w.detail}
                    for w in step.waiting
                ],
                "gpusInUse": step.gpus_in_use,
                "queues": [_queue(row) for row in step.queues],
            }
            for step in run.steps
        ],
        "workloads": [
            {
                "name": item.workload.name,
                "kind": item.workload.kind,
                "queue": item.workload.queue,
                "namespace": item.workload.namespace,
                "priority": item.priority,
                "podGroups": [view.to_dict() for view in item.pod_groups.values()],
                "arrivedAt": item.workload.arrives,
                "startedAt": item.started_at,
                "finishedAt": item.finished_at,
                "waitReasons": item.wait_codes,
                "status": _status(item).split(" ")[0],
            }
            for item in run.workloads
        ],
    }


def _grouped(event: GroupedEvent) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workload": event.workload,
        "kind": event.kind,
        "namespace": event.namespace,
        "podGroups": [view.to_dict() for view in event.pod_groups],
        "newPods": event.new_pods,
        "line": grouping_line(event),
    }
    if event.rescale is not None:
        group, old, new = event.rescale
        body["rescale"] = {"workerGroup": group, "from": old, "to": new}
    return body


def _queue(row: QueueRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "parent": row.parent,
        "deserved": row.deserved,
        "limit": row.limit,
        "overQuotaWeight": row.weight,
        "fairShare": row.fair_share,
        "allocated": row.allocated,
        "requested": row.requested,
    }
