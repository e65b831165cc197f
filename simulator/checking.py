"""Bad objects of a scenario are reported and left out, not fatal (cli-contract "Bad input").

Why this module exists: the simulation's own cache is strict (a bad object met in the
middle of a replay would leave the simulator's bookkeeping and the engine's view
apart), so every object is checked here first, by the scheduler's own reader. Each bad
object gives one :class:`~crds.errors.InputError` naming object, field and value; it is
left out of the scenario, with the whole job it belongs to (a gang missing a pod would
never start, and its job never end), and the rest is simulated.
"""

from __future__ import annotations

from typing import Any

from crds.documents import SourcedObject
from crds.errors import describe_object
from scheduler.cache.cluster_cache import ClusterCache
from simulator.model import Scenario


def leave_out_bad_objects(scenario: Scenario, scheduler_name: str) -> None:
    """Check every object of ``scenario``; drop the bad ones (in place), each error added to
    ``scenario.bad_objects``."""
    source = scenario.source or "<cluster>"
    found = scenario.bad_objects
    cache = ClusterCache(scheduler_name, strict=False)

    def bad(manifest: dict[str, Any], where: str) -> bool:
        named = describe_object(manifest)
        where = scenario.sources.get(named, where)
        if where.endswith(f": {named}"):  # a bare pod is its own workload: named once
            where = where[: -len(named) - 2]
        cache.upsert(SourcedObject(manifest, where, 0))
        if not cache.errors:
            return False
        found.extend(cache.errors.values())
        cache.errors.clear()
        return True

    scenario.priority_classes = [m for m in scenario.priority_classes if not bad(m, source)]
    scenario.queues = [m for m in scenario.queues if not bad(m, source)]
    scenario.topologies = [m for m in scenario.topologies if not bad(m, source)]
    scenario.nodes = [m for m in scenario.nodes if not bad(m, source)]
    scenario.pools = [p for p in scenario.pools if not bad(p.template, source)]
    kept = []
    for job in scenario.jobs:
        where = job.origin or source
        broken = [bad(manifest, where) for manifest in [job.pod_group, *job.pods]]
        if not any(broken):
            kept.append(job)
    scenario.jobs = kept
