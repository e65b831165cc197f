"""The kopf handlers on Pods: the only place domain errors become kopf retry signals.

Why this module exists: kopf delivers pod events; :func:`podgrouper.reconciling.reconcile_pod`
decides.  This module registers one handler for creation, update and operator resume on
an **explicit** kopf registry (no global registry, no import side effects), filters
events by ``spec.schedulerName`` and the pod label selector before any work is queued,
and turns :class:`~podgrouper.reconciling.RetryableError` into
``kopf.TemporaryError`` with exponential back-off (1 s doubling to 60 s, KAI's per-item
rate limiter).  Adapter errors were already reported as events by the reconcile and
return normally, so a broken workload never puts the operator in a crash loop; nothing
raises ``kopf.PermanentError``.

The reconcile's dependencies (API client, grouper registry, settings) arrive through
kopf's ``memo`` as one :class:`Runtime` under :data:`MEMO_KEY`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import kopf

from crds.upstream_workload import KAI_PODGROUP
from integrations import registry
from kubeapi.protocol import Kube, KubeController
from podgrouper import reconciling, settings, upstream_regroup, upstream_status

MEMO_KEY = "podgrouper"
HANDLER_IDS = ("podgrouper/create", "podgrouper/update", "podgrouper/resume")
UPSTREAM_STATUS_IDS = ("podgrouper/upstream-status-pod", "podgrouper/upstream-status-podgroup")
UPSTREAM_REGROUP_ID = "podgrouper/upstream-regroup"
MAX_DELAY = 60.0
UNEXPECTED_ERROR_BACKOFF = 60.0
"""kopf's retry delay for an exception the reconcile did not classify (a bug)."""


@dataclass(frozen=True, slots=True)
class Runtime:
    """What a handler needs; kopf passes it in ``memo``."""

    kube: Kube
    groupers: registry.GrouperRegistry
    settings: settings.PodGrouperSettings


def backoff(retry: int) -> float:
    """Seconds before retry number ``retry`` (0-based): 1, 2, 4, … capped at 60."""
    return min(2.0 ** max(retry, 0), MAX_DELAY)


def runtime_of(memo: Mapping[str, Any]) -> Runtime:
    """The :class:`Runtime` in kopf's memo; a clear error if start-up did not put one."""
    runtime = memo.get(MEMO_KEY)
    if not isinstance(runtime, Runtime):
        raise RuntimeError(f"kopf memo[{MEMO_KEY!r}] holds no podgrouper Runtime")
    return runtime


async def group_pod(
    *, body: kopf.Body, memo: kopf.Memo, retry: int, logger: kopf.Logger, **_: Any
) -> None:
    """Group one pod; retryable failures come back after :func:`backoff` seconds."""
    runtime = runtime_of(memo)
    pod = {"apiVersion": "v1", "kind": "Pod", **dict(body)}
    try:
        outcome = await reconciling.reconcile_pod(
            pod, runtime.kube, runtime.groupers, runtime.settings
        )
    except reconciling.RetryableError as exc:
        delay = backoff(retry)
        logger.warning("podgrouper: %s; retry %d in %.0fs", exc, retry + 1, delay)
        raise kopf.TemporaryError(str(exc), delay=delay) from exc
    if outcome.error:
        logger.warning("podgrouper: not grouped: %s", outcome.error)
    elif outcome.applied is not None:
        applied = outcome.applied
        logger.info(
            "podgrouper: %s %s %s, pod %s",
            KAI_PODGROUP,  # never to be taken for Kubernetes' own podgroups.scheduling.k8s.io
            applied.pod_group,
            applied.write.value,
            "patched" if applied.pod_patched else "unchanged",
        )
    else:
        logger.debug("podgrouper: ignored: %s", outcome.skipped)


def _controller(kube_: Kube) -> KubeController | None:
    """The client as a :class:`KubeController` (it can patch ``status``), else ``None``."""
    return cast("KubeController", kube_) if hasattr(kube_, "patch") else None


async def mirror_from_pod(*, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A pod naming a ``podgroups.scheduling.k8s.io`` changed: refresh that group's status."""
    kube_ = _controller(runtime_of(memo).kube)
    if kube_ is not None:
        await upstream_status.mirror_for_pod(kube_, {"apiVersion": "v1", "kind": "Pod", **body})


async def mirror_from_kai_podgroup(*, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A ``podgroups.scheduling.run.ai`` made from an upstream group changed: mirror it."""
    kube_ = _controller(runtime_of(memo).kube)
    if kube_ is not None:
        await upstream_status.mirror_for_kai_podgroup(kube_, dict(body))


async def regroup_for_upstream_podgroup(
    *, body: kopf.Body, type: str | None, memo: kopf.Memo, logger: kopf.Logger, **_: Any
) -> None:
    """A ``podgroups.scheduling.k8s.io`` appeared or changed: group the pods waiting for it."""
    if type == "DELETED":
        return
    runtime = runtime_of(memo)
    try:
        await upstream_regroup.regroup_waiting(
            dict(body), runtime.kube, runtime.groupers, runtime.settings
        )
    except reconciling.RetryableError as exc:
        logger.warning("podgrouper: %s; the pod's own next event retries", exc)


def selects_upstream(config: settings.PodGrouperSettings) -> Callable[..., bool]:
    """kopf's ``when=`` filter for the status mirror: our pods naming an upstream PodGroup."""
    ours = selects(config)

    def when(*, spec: kopf.Spec, labels: kopf.Labels, **_: Any) -> bool:
        group = spec.get("schedulingGroup")
        named = isinstance(group, Mapping) and bool(group.get("podGroupName"))
        return named and ours(spec=spec, labels=labels)

    return when


def derived_from_upstream(*, body: kopf.Body, **_: Any) -> bool:
    """kopf's ``when=`` filter: a KAI PodGroup owned by a ``scheduling.k8s.io`` group."""
    return upstream_status.derived_from_upstream(dict(body))


def selects(config: settings.PodGrouperSettings) -> Callable[..., bool]:
    """kopf's ``when=`` filter: our scheduler name and the pod label selector."""

    def when(*, spec: kopf.Spec, labels: kopf.Labels, **_: Any) -> bool:
        return spec.get("schedulerName") == config.scheduler_name and (
            config.pod_selector.matches(labels)
        )

    return when


def register(operator: kopf.OperatorRegistry, config: settings.PodGrouperSettings) -> None:
    """Register :func:`group_pod` for create, update and resume of Pods on ``operator``."""
    when = selects(config)
    create_id, update_id, resume_id = HANDLER_IDS
    errors = kopf.ErrorsMode.TEMPORARY
    backoff_ = UNEXPECTED_ERROR_BACKOFF
    kopf.on.create(
        "v1", "pods", id=create_id, registry=operator, when=when, errors=errors, backoff=backoff_
    )(group_pod)
    kopf.on.update(
        "v1", "pods", id=update_id, registry=operator, when=when, errors=errors, backoff=backoff_
    )(group_pod)
    kopf.on.resume(
        "v1", "pods", id=resume_id, registry=operator, when=when, errors=errors, backoff=backoff_
    )(group_pod)
    pod_status_id, podgroup_status_id = UPSTREAM_STATUS_IDS
    kopf.on.event("v1", "pods", id=pod_status_id, registry=operator, when=selects_upstream(config))(
        mirror_from_pod
    )
    kopf.on.event(
        "scheduling.run.ai",
        "v2alpha2",
        "podgroups",
        id=podgroup_status_id,
        registry=operator,
        when=derived_from_upstream,
    )(mirror_from_kai_podgroup)
    kopf.on.event(
        "scheduling.k8s.io", "v1beta1", "podgroups", id=UPSTREAM_REGROUP_ID, registry=operator
    )(regroup_for_upstream_podgroup)
