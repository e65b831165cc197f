"""Stale-gang eviction: a gang running below its requirement is evicted after a grace period.

Why (docs/semantics.md §5.2): a gang that lost pods (a node died, a pod failed) holds resources it
cannot use. The first cycle that sees it stale stamps the PodGroup
(``kai.scheduler/stale-podgroup-timestamp``); once the stamp is older than
the grace period (the PodGroup's ``stalenessGracePeriod``, else the
scheduler's default of 60 s; negative = never) every active pod of the job is
evicted. The stamp is removed when the job recovers.

A pod whose bind the last commit could not write (``ClusterSnapshot.bind_failed``) and
that allocate placed again this cycle does not count (:func:`failing_binds`): the live
scheduler writes a cycle's binds after deciding it, so without this a gang whose
BindRequest is refused for one pod every cycle would look complete to this action,
every cycle, and stay partly bound for ever. KAI unallocates such a pod in its session
when the bind fails.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from crds.meta import rfc3339
from crds.names import STALE_ANNOTATION
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, ACTIVE_USED, PodStatus
from scheduler.framework.session import Session


def is_stale(job: PodGroupInfo, not_counted: Container[str] = frozenset()) -> bool:
    """No pod succeeded, something is active, and the active pods miss the group's requirement.

    The pods whose keys are in ``not_counted`` are not active (:func:`failing_binds`).
    One pass over the pods: the action asks this of every job in the cluster each cycle.
    """
    if job.shape is None and len(job.pod_sets) == 1:
        # one pod set required directly (most jobs): its own count against its minimum
        pod_set = job.pod_sets[0]
        return 0 < _used(pod_set, not_counted) < pod_set.min_available
    used: dict[str, int] = {}
    for pod_set in job.pod_sets:
        count = _used(pod_set, not_counted)
        if count < 0:
            return False
        used[pod_set.name] = count
    if not any(used.values()):
        return False
    return not job.counts_meet(used)


def _used(pod_set: PodSetInfo, not_counted: Container[str]) -> int:
    """The pod set's active pods (holding resources) but those ``not_counted``, or -1 when
    one of its pods succeeded."""
    count = 0
    for pod in pod_set.pods:
        status = pod.status
        if status == PodStatus.SUCCEEDED:
            return -1
        if status in ACTIVE_USED and not (not_counted and pod.key in not_counted):
            count += 1
    return count


def failing_binds(session: Session) -> frozenset[str]:
    """The pods placed this cycle whose bind the last commit could not write
    (``ClusterSnapshot.bind_failed``): likely refused again, they do not count."""
    failed = session.snapshot.bind_failed
    if not failed:
        return frozenset()
    return frozenset(pod.key for pod, _ in session.decisions.binds if pod.key in failed)


def may_be_stale(session: Session) -> Iterable[str]:
    """The jobs that may be stale or stamped: the snapshot's, and those whose pods changed
    status in the session (every job when the snapshot does not say).

    A job outside the snapshot's set is not stamped, and when the snapshot was taken
    either every pod was active (holding resources), so it met its requirement
    (:meth:`PodGroupInfo.short_with_every_pod`), or none was, so it held nothing
    (:func:`is_stale` asks for an active pod). Unless one of its pods changes status in
    the session, that still holds when the action asks.
    """
    maybe = session.snapshot.maybe_stale
    if maybe is None:
        return session.snapshot.jobs
    return maybe | session.job_versions.keys()


def _needs_care(job: PodGroupInfo | None, not_counted: Container[str]) -> bool:
    return job is not None and (job.stale_since is not None or is_stale(job, not_counted))


class StaleGangEvictionAction:
    """Stamp, wait the grace period, then evict every active pod of a stale gang."""

    name = "stalegangeviction"

    def execute(self, session: Session) -> None:
        default_grace = session.config.staleness_grace_period_s
        now = session.snapshot.now
        jobs, failed = session.snapshot.jobs, failing_binds(session)
        # a job neither stale nor stamped needs nothing; jobs are independent of each other
        for key in sorted(k for k in may_be_stale(session) if _needs_care(jobs.get(k), failed)):
            job = jobs[key]
            if not is_stale(job, failed):
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
