"""The demo's closing summary: what a newcomer just saw, one plain sentence per idea.

Why: the timeline is long and exact; a first-time reader needs the few ideas
it showed, in words, and where to go next. Every sentence is built from what
happened in the run (who started whole, who waited and why, who was evicted
or moved, which GPUs were shared, which rack a gang landed in), so the summary
can never claim something the engine did not do.
"""

from __future__ import annotations

from dataclasses import dataclass

from podmuster.demo.timeline import DemoRun, Evicted, Progress, SceneRun, Started


@dataclass(frozen=True, slots=True)
class Takeaway:
    """One idea the demo showed: a short topic and a sentence about this run."""

    topic: str
    text: str


NEXT_STEPS = (
    "podmuster schedule snapshot.yaml --explain   decisions for your own cluster's objects",
    "podmuster simulate --help                    what-if runs over traces and manifests",
    "docs/install.md                              helm install on a real cluster",
)


def _fmt(gpus: float) -> str:
    return f"{gpus:g}"


def _starts(run: DemoRun) -> list[Started]:
    return [s for step in run.steps for s in step.started]


def _evictions(run: DemoRun, action: str) -> list[Evicted]:
    return [e for step in run.steps for e in step.evicted if e.action == action]


def _gangs(run: DemoRun) -> Takeaway | None:
    whole = [
        (item, start)
        for item in run.workloads
        for start in _starts(run)
        if start.workload == item.workload.name
        and not start.grew
        and not start.moved
        and any(view.min_member > 1 for view in item.pod_groups.values())
    ]
    if not whole:
        return None
    biggest_item, biggest = max(whole, key=lambda pair: (pair[1].gpus, pair[1].pods))
    waited = [item for item, _ in whole if "GangDoesNotFit" in item.wait_codes]
    text = (
        f"{len(whole)} gangs started whole, the largest {biggest_item.workload.name}"
        f" ({biggest.pods} pods, {_fmt(biggest.gpus)} GPUs) at once; no gang ever ran in part."
    )
    if waited:
        text += f" {waited[0].workload.name} waited for room rather than start partly."
    return Takeaway("gang scheduling", text)


def _fair_share(run: DemoRun) -> Takeaway | None:
    busiest = max(run.steps, key=lambda s: sum(r.requested for r in s.queues if not r.parent))
    tops = [row for row in busiest.queues if not row.parent]
    if len(tops) < 2:
        return None
    shares = ", ".join(f"{row.name} {_fmt(row.fair_share)}" for row in tops)
    return Takeaway(
        "fair share",
        f"At t={busiest.minute}m the GPUs were divided {shares}: deserved quota first,"
        " the rest by over-quota weight, then again inside each department.",
    )


def _quota_rules(run: DemoRun) -> Takeaway | None:
    def waited(code: str) -> list[Progress]:
        return [item for item in run.workloads if code in item.wait_codes]

    parts = []
    over_limit = waited("OverLimit")
    if over_limit:
        parts.append(f"{over_limit[0].workload.name} waited at its queue's limit")
    non_preemptible = waited("NonPreemptibleOverQuota")
    if non_preemptible:
        parts.append(
            f"{non_preemptible[0].workload.name} (non-preemptible) waited for room inside"
            " its deserved quota"
        )
    if not parts:
        return None
    return Takeaway("limits", "; ".join(parts) + ".")


def _scene(scene: SceneRun) -> Takeaway | None:
    run = scene.run
    name = scene.scene.name
    if name == "preempt":
        victims = _evictions(run, "preempt")
        if victims:
            v = victims[0]
            return Takeaway(
                "preemption",
                f"{v.for_workload} preempted {v.workload} in its own queue: higher priority wins.",
            )
    if name == "reclaim":
        victims = _evictions(run, "reclaim")
        if victims:
            v = victims[0]
            gpus = sum(e.gpus for e in victims)
            return Takeaway(
                "reclaim",
                f"{v.for_workload} took back {_fmt(gpus)} borrowed GPUs from {v.workload}'s"
                " queue, and no more than it deserved.",
            )
    if name == "consolidate":
        moved = [e for e in _evictions(run, "consolidation") if e.moved_to]
        if moved:
            m = moved[0]
            return Takeaway(
                "consolidation",
                f"{m.workload} was moved, not stopped, so {m.for_workload} got whole GPUs"
                " on one node.",
            )
    if name == "share":
        return _sharing(run)
    if name == "topology":
        return _topology(scene)
    return None


def _sharing(run: DemoRun) -> Takeaway | None:
    fractional = [s for s in _starts(run) if s.gpus != int(s.gpus)]
    if not fractional or not run.steps:
        return None
    whole = sum(s.gpus for s in _starts(run) if s.gpus == int(s.gpus))
    held = sum(run.steps[-1].gpus_in_use.values())
    asked = sum(s.gpus for s in fractional)
    devices = held - int(whole)
    return Takeaway(
        "GPU sharing",
        f"{len(fractional)} notebooks asked for {_fmt(asked)} GPUs together and ran on"
        f" {devices} shared GPUs; queues are charged the fractions asked.",
    )


def _topology(scene: SceneRun) -> Takeaway | None:
    racks = dict(scene.scene.cluster.racks)
    for start in _starts(scene.run):
        landed = sorted({racks.get(node, "?") for node in start.nodes})
        if start.pods > 1:
            where = landed[0] if len(landed) == 1 else " and ".join(landed)
            verdict = "all in" if len(landed) == 1 else "split across"
            return Takeaway(
                "topology", f"{start.workload}'s {start.pods} pods ran {verdict} {where}."
            )
    return None


def takeaways(run: DemoRun) -> list[Takeaway]:
    """What the main story and the scenes showed, in the order a reader met them."""
    found = [_gangs(run), _fair_share(run), _quota_rules(run)]
    found += [_scene(scene) for scene in run.scenes]
    return [item for item in found if item is not None]
