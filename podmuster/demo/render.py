"""The demo's output: a readable timeline and summary, or the same facts as JSON.

Why: the demo is read by people meeting KAI's ideas for the first time, so
the text names the rule behind every decision in plain words; the JSON form
carries the same facts (and the engine's own reason text) for tests and
scripts.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from podmuster.demo.podgrouping import PodGroupView
from podmuster.demo.takeaways import NEXT_STEPS, takeaways
from podmuster.demo.timeline import (
    DemoRun,
    Evicted,
    GroupedEvent,
    Pipelined,
    Progress,
    QueueRow,
    SceneRun,
    Started,
    Step,
)

_COLORS = {"start": "32", "wait": "33", "evict": "31", "finish": "2", "title": "1"}


class Painter:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, kind: str, text: str) -> str:
        return f"\033[{_COLORS[kind]}m{text}\033[0m" if self.color else text


def _limit(value: float) -> str:
    return "-" if value < 0 else f"{value:g}"


def _count(n: float, noun: str) -> str:
    """``1 pod``, ``3 pods``; a fraction of a GPU reads ``0.5 GPU``, ``1.5 GPUs``."""
    return f"{n:g} {noun}" if 0 < n <= 1 else f"{n:g} {noun}s"


_SCENE_COUNT = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}


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
    where = run.cluster
    lines = [
        paint(
            "title",
            "podmuster demo: real manifests, grouped by the podgrouper's adapters,"
            " scheduled by the engine",
        ),
        f"{len(where.nodes)} nodes x {where.gpus_per_node} GPUs = {where.gpus} GPUs; "
        "2 departments with 2 teams each; bin-packing placement.",
        "Actions each cycle: allocate, consolidation, reclaim, preempt, stalegangeviction.",
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
    lines += _who_got_what(run, paint)
    if run.scenes:
        lines += [
            "",
            paint("title", "Making room: when every GPU is taken"),
            f"{_SCENE_COUNT.get(len(run.scenes), len(run.scenes))} scenes, each on its own"
            " small cluster. Cycles run one second apart, and",
            "each cycle's decisions happen before the next, as with `schedule --rounds`.",
        ]
        for number, scene in enumerate(run.scenes, 1):
            lines += _scene_lines(number, scene, paint)
    lines += ["", paint("title", "What you just saw")]
    for item in takeaways(run):
        lines += textwrap.wrap(
            item.text,
            width=92,
            initial_indent=f"  {item.topic + ':':<17}",
            subsequent_indent=" " * 19,
        )
    lines += ["", paint("title", "Next")]
    lines += [f"  {step}" for step in NEXT_STEPS]
    return "\n".join(lines) + "\n"


def _who_got_what(run: DemoRun, paint: Painter) -> list[str]:
    lines = []
    for item in run.workloads:
        w = item.workload
        if item.started_at is None:
            why = item.last_wait.plain if item.last_wait else "no reason reported"
            outcome = paint("wait", f"waiting: {why}")
            if item.evictions:
                outcome = paint("wait", f"evicted at t={item.evictions[-1].minute}m, ") + outcome
        else:
            waited = item.started_at - w.arrives
            outcome = f"started t={item.started_at}m"
            if waited:
                outcome += f" after {waited}m ({', '.join(item.wait_codes)})"
            outcome += f", {_status(item)}"
            for e in item.evictions:
                if e.moved_to:
                    outcome += f", moved at t={e.minute}m"
                else:
                    outcome += f", {_count(e.pods, 'pod')} evicted at t={e.minute}m ({e.action})"
        lines.append(f"  {w.name:<15} {w.queue:<16} {outcome}")
    return lines


def _scene_lines(number: int, scene: SceneRun, paint: Painter) -> list[str]:
    lines = ["", paint("title", f"Scene {number}. {scene.scene.title}"), f"  {scene.scene.setup}"]
    for step in scene.run.steps:
        lines += _step_lines(step, scene.run, paint)
    lines.append("Who got what")
    lines += _who_got_what(scene.run, paint)
    lines += textwrap.wrap(
        scene.scene.moral, width=92, initial_indent="  In short: ", subsequent_indent="  "
    )
    return lines


_WHY = {
    "preempt": "same queue, higher priority: {by} ({by_priority}) outranks {victim}"
    " ({victim_priority}); a gang is evicted whole",
    "reclaim": "{victim_queue} borrowed beyond its fair share; {by_queue} is below its"
    " own and takes it back",
    "stalegangeviction": "a gang below its minimum holds GPUs it cannot use",
}


def _evicted_lines(event: Evicted, run: DemoRun, paint: Painter) -> list[str]:
    where = ", ".join(n.removeprefix("gpu-") for n in event.nodes)
    pods = f"{_count(event.pods, 'pod')}, {_count(event.gpus, 'GPU')}"
    cause = f"{event.action}, for {event.for_workload}" if event.for_workload else event.action
    if event.moved_to:
        to = ", ".join(n.removeprefix("gpu-") for n in event.moved_to)
        return [
            "  " + paint("evict", f"move  {event.workload}") + f": {pods} from {where} to {to}"
            f" ({cause})",
            "      moved, not stopped: its pod is re-created and placed again right away",
        ]
    items = {item.workload.name: item for item in run.workloads}
    victim = items[event.workload]
    by = items.get(event.for_workload or "")
    why = _WHY.get(event.action, "").format(
        by=event.for_workload,
        by_priority=by.priority if by else "",
        by_queue=by.workload.queue if by else "",
        victim=event.workload,
        victim_priority=victim.priority,
        victim_queue=victim.workload.queue,
    )
    return [
        "  " + paint("evict", f"evict {event.workload}") + f": {pods} on {where} ({cause})",
        f"      {why}",
        "      its controller re-creates the evicted pods; they wait in the queue",
    ]


def _pipelined_line(event: Pipelined) -> list[str]:
    where = ", ".join(n.removeprefix("gpu-") for n in event.nodes)
    return [
        f"  reserve {event.workload}: {_count(event.pods, 'pod')} pipelined on {where}",
        "      the GPUs are still being freed: reserved for it, nothing bound yet",
    ]


def _started_lines(s: Started, run: DemoRun, paint: Painter) -> list[str]:
    by_name = {item.workload.name: item.workload for item in run.workloads}
    where = ", ".join(n.removeprefix("gpu-") for n in s.nodes)
    placed = f"{_count(s.pods, 'pod')}, {_count(s.gpus, 'GPU')} on {where}"
    if s.shares_with:
        placed += f", sharing a GPU with {', '.join(s.shares_with)}"
    elif s.opened_shared:
        placed += ", on a GPU it opens for sharing"
    if s.moved:
        return [
            "  " + paint("start", f"start {s.workload}") + f": {placed} (moved here)",
            "      running again; every job that ran before still runs",
        ]
    if s.grew:
        return [
            "  " + paint("start", f"grow  {s.workload}") + f": {placed}",
            f"      {s.extras} elastic extras beyond the gang, placed one per pop",
        ]
    extras = f" (gang + {s.extras} elastic extras)" if s.extras else ""
    return [
        "  " + paint("start", f"start {s.workload}") + f": {placed}{extras}",
        f"      {by_name[s.workload].shows}",
    ]


def _step_lines(step: Step, run: DemoRun, paint: Painter) -> list[str]:
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
    if step.evicted:
        used = "  ".join(
            f"{n.removeprefix('gpu-')} {g}/{run.cluster.gpus_per_node}"
            for n, g in step.gpus_before.items()
        )
        out.append(f"  GPUs in use before: {used}")
    for cycle in range(1, step.cycles + 1):
        if step.cycles > 1:
            out.append(f"  cycle {cycle}:" if cycle == 1 else f"  cycle {cycle}, one second later:")
        for evicted in (e for e in step.evicted if e.cycle == cycle):
            out += _evicted_lines(evicted, run, paint)
        for pipelined in (p for p in step.pipelined if p.cycle == cycle):
            out += _pipelined_line(pipelined)
        for started in (s for s in step.started if s.cycle == cycle):
            out += _started_lines(started, run, paint)
    for wait in step.waiting:
        again = wait.code in previous.get(wait.workload, ())
        note = " (still)" if again else ""
        out.append("  " + paint("wait", f"wait  {wait.workload}: {wait.code}{note}"))
        if not again:
            out.append(f"      {wait.plain}")
    used = "  ".join(
        f"{n.removeprefix('gpu-')} {g}/{run.cluster.gpus_per_node}"
        for n, g in step.gpus_in_use.items()
    )
    out.append(f"  GPUs in use: {used}")
    return out


def summary(run: DemoRun) -> dict[str, Any]:
    """The JSON document of ``podmuster demo -o json``: the main story, then ``scenes``."""
    document = _run_summary(run)
    document["takeaways"] = [{"topic": t.topic, "text": t.text} for t in takeaways(run)]
    document["scenes"] = [
        {
            "name": scene.scene.name,
            "title": scene.scene.title,
            "setup": scene.scene.setup,
            "inShort": scene.scene.moral,
            **_run_summary(scene.run),
        }
        for scene in run.scenes
    ]
    return document


def _evicted(event: Evicted) -> dict[str, Any]:
    return {
        "workload": event.workload,
        "pods": event.pods,
        "gpus": event.gpus,
        "nodes": list(event.nodes),
        "action": event.action,
        "for": event.for_workload,
        "movedTo": list(event.moved_to),
        "cycle": event.cycle,
    }


def _run_summary(run: DemoRun) -> dict[str, Any]:
    return {
        "cluster": {
            "nodes": list(run.cluster.nodes),
            "gpusPerNode": run.cluster.gpus_per_node,
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
                        "moved": s.moved,
                        "cycle": s.cycle,
                        "sharesGpuWith": list(s.shares_with),
                    }
                    for s in step.started
                ],
                "evicted": [_evicted(e) for e in step.evicted],
                "pipelined": [
                    {
                        "workload": p.workload,
                        "pods": p.pods,
                        "nodes": list(p.nodes),
                        "cycle": p.cycle,
                    }
                    for p in step.pipelined
                ],
                "cycles": step.cycles,
                "gpusBefore": step.gpus_before,
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
                "evictions": [_evicted(e) | {"minute": e.minute} for e in item.evictions],
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
