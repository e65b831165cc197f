"""Stale-gang eviction: a gang running below its requirement is evicted after a grace period.

Why (docs/semantics.md §5.2): a gang that lost pods (a node died, a pod failed) holds resources it
cannot use. The first cycle that sees it stale stamps the PodGroup
(``kai.scheduler/stale-podgroup-timestamp``); once the stamp is older than
the grace period (the PodGroup's ``stalenessGracePeriod``, else the
scheduler's default of 60 s; negative = never) every active pod of the job is
evicted. The stamp is removed when the job recovers.
"""

from __future__ import annotations

from crds.meta import rfc3339
from crds.names import STALE_ANNOTATION
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, PodStatus
from scheduler.framework.session import Session


def is_stale(job: PodGroupInfo) -> bool:
    """No pod succeeded, something is active, and the active pods miss the group's requirement."""
    if any(pod.status == PodStatus.SUCCEEDED for pod in job.iter_pods()):
        return False
    if not any(pod_set.active_used() for pod_set in job.pod_sets):
        return False
    return not job.requirement_met(PodSetInfo.active_used)


class StaleGangEvictionAction:
    """Stamp, wait the grace period, then evict every active pod of a stale gang."""

    name = "stalegangeviction"

    def execute(self, session: Session) -> None:
        default_grace = session.config.staleness_grace_period_s
        now = session.snapshot.now
        for key in sorted(session.snapshot.jobs):
            job = session.snapshot.jobs[key]
            if not is_stale(job):
                if job.stale_since is not None:
                    session.annotations.setdefault(key, {})[STALE_ANNOTATION] = None
                continue
            since = job.stale_since
            if since is None:
                since = now
                session.annotations.setdefault(key, {})[STALE_ANNOTATION] = rfc3339(now)
            grace = default_grace if job.staleness_grace is None else job.staleness_grace
            if grace < 0 or now - since < grace:
                continue
            statement = session.statement()
            for pod in job.iter_pods():
                if pod.status in ACTIVE_ALLOCATED:
                    statement.evict(pod, self.name, key)
            statement.commit()
            session.considered.add(key)
