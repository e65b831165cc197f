"""When the engine's time-based rules next change their answer, so a cycle runs then.

Why: the simulator runs a cycle only when something changed (an arrival, a
completion, applied decisions). Two of KAI's rules change with time alone: a
victim's minimum runtime ends (docs/semantics.md §5.7), and a stale gang's grace
period runs out (§5.2, stale-gang eviction). Without a wake-up at those
instants a starved queue would wait for the next unrelated event to reclaim,
and a stale gang would hold its GPUs until then: the prediction would be late
by however long the trace happens to be quiet.

The wake-up times are a superset of the exact ones: every running job's last
start plus every minimum runtime any queue or the scheduler defines (which one
applies depends on the preemptor, known only inside the cycle). An extra wake-up
costs one cycle that changes nothing; a missing one makes the replay wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from crds.names import STALE_ANNOTATION
from scheduler.api.queues import QueueTree
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.config import SchedulerConfig


def min_runtimes(queues: QueueTree, config: SchedulerConfig) -> tuple[float, ...]:
    """Every positive minimum runtime that can protect a victim, ascending."""
    values = {config.default_preempt_min_runtime_s, config.default_reclaim_min_runtime_s}
    for queue in queues.queues.values():
        for value in (queue.preempt_min_runtime, queue.reclaim_min_runtime):
            if value is not None:
                values.add(float(value))
    return tuple(sorted(value for value in values if value > 0))


def next_rule_change(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    annotations: Mapping[str, Mapping[str, str | None]],
    runtimes: tuple[float, ...],
) -> float:
    """The earliest instant after ``snapshot.now`` at which a time-based rule flips.

    ``annotations`` are the cycle's PodGroup annotation changes: a gang first
    found stale in this cycle is stamped at ``snapshot.now``. ``math.inf`` when
    no rule will change with time alone.
    """
    now = snapshot.now
    earliest = math.inf
    grace = config.staleness_grace_period_s
    for key, job in snapshot.jobs.items():
        if runtimes and job.last_start is not None:
            for runtime in runtimes:
                ends = job.last_start + runtime
                if ends > now:
                    earliest = min(earliest, ends)
                    break  # ascending: the first one in the future is this job's earliest
        if grace >= 0:
            stamped = annotations.get(key, {}).get(STALE_ANNOTATION)
            since = now if stamped is not None else job.stale_since
            if since is not None and since + grace > now:
                earliest = min(earliest, since + grace)
    return earliest
