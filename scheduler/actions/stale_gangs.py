"""Stale-gang eviction: a gang running below its minimum is evicted after a grace period (§5.2).

Why: a gang that lost pods (a node died, a pod failed) holds resources it
cannot use. The first cycle that sees it stale stamps the PodGroup
(``kai.scheduler/stale-podgroup-timestamp``); once the stamp is older than
the grace period (default 60 s, negative = never) every active pod of the
job is evicted. The stamp is removed when the job recovers.
"""

from __future__ import annotations

from datetime import UTC, datetime

from crds.names import STALE_ANNOTATION
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, PodStatus
from scheduler.framework.session import Session


def is_stale(job: PodGroupInfo) -> bool:
    """No pod succeeded, something is active, and some pod set is below its minimum."""
    if any(pod.status == PodStatus.SUCCEEDED for pod in job.iter_pods()):
        return False
    if not any(pod_set.active_used() for pod_set in job.pod_sets):
        return False
    return any(pod_set.active_used() < pod_set.min_available for pod_set in job.pod_sets)


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StaleGangEvictionAction:
    """Stamp, wait the grace period, then evict every active pod of a stale gang."""

    name = "stalegangeviction"

    def execute(self, session: Session) -> None:
        grace = session.config.staleness_grace_period_s
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
                session.annotations.setdefault(key, {})[STALE_ANNOTATION] = _rfc3339(now)
            if grace < 0 or now - since < grace:
                continue
            statement = session.statement()
            for pod in job.iter_pods():
                if pod.status in ACTIVE_ALLOCATED:
                    statement.evict(pod, self.name, key)
            statement.commit()
            session.considered.add(key)
