"""One pod's reconcile: filter, resolve owners, fetch related objects, group, apply.

Why this module exists: this is the whole podgrouper decision for one pod event, kept
free of kopf so it can be tested against :class:`~tests.kits.podgrouper_kube.FakeKube` and
reused by any driver.  Its error policy (docs/semantics.md §4.1, issue 4):

* pods of other schedulers, pods outside the selectors, owner-less pods that already
  carry ``pod-group-name`` (user-managed PodGroups; not those naming a Kubernetes
  PodGroup in ``spec.schedulingGroup``, whose KAI PodGroup is ours), and pods that are,
  or are owned by, an object annotated ``kai.scheduler/skip-podgrouper: "true"``
  (external PodGroups, :mod:`integrations.external`) are ignored;
* a :class:`~integrations.base.GroupingError` (a workload the adapter cannot group, a
  malformed owner chain) becomes a Warning event ``PodGrouperWarning`` on the pod and its
  top owner and is **not** raised — retrying cannot fix it, and other pods go on;
* any :class:`~podgrouper.kube.ApiError` raises :class:`RetryableError` (the driver
  retries with back-off); a non-transient one (NotFound owner, Forbidden write) is also
  reported as a Warning event on the pod first;
* an owner-lookup failure on a terminating pod is ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.names import POD_GROUP_ANNOTATION
from integrations import base, external, fields, registry, resolution, upstream_workload
from kubeapi.errors import ApiError, NotFoundError
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import Kube, KubeReader, KubeWriter
from podgrouper import applying, lookups, owners, settings

WARNING = "Warning"
WARNING_REASON = "PodGrouperWarning"
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"
RELATED_ROUNDS = 8
"""At most this many rounds of related-object reads per pod."""


class RetryableError(Exception):
    """The reconcile of ``pod`` could not finish now; the cause is chained."""

    def __init__(self, pod: str, cause: ApiError) -> None:
        self.pod = pod
        self.cause = cause
        super().__init__(f"{pod}: {cause}")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one reconcile did: applied, skipped (and why) or failed to group (and why)."""

    applied: applying.Applied | None = None
    skipped: str = ""
    error: str = ""


def ignored(pod: Mapping[str, Any], config: settings.PodGrouperSettings) -> str:
    """Why the reconcile ignores ``pod`` without reading anything (empty: it does not)."""
    scheduler = str((pod.get("spec") or {}).get("schedulerName") or "")
    if scheduler != config.scheduler_name:
        return f"scheduler {scheduler or '(default)'} is not {config.scheduler_name}"
    if not config.pod_selector.matches(fields.labels(pod)):
        return f"labels do not match {config.pod_selector}"
    if (
        not fields.owner_references(pod)
        and POD_GROUP_ANNOTATION in fields.annotations_of(pod)
        and not upstream_workload.scheduling_group(pod)  # ours: its upstream group's
    ):
        return "owner-less pod with pod-group-name: user-managed PodGroup"
    if external.requests_skip(pod):
        return external.reason(pod)
    return ""


async def reconcile_pod(
    pod: Mapping[str, Any],
    kube_: Kube,
    groupers: registry.GrouperRegistry,
    config: settings.PodGrouperSettings,
) -> Outcome:
    """Group ``pod`` and write the result (policy in the module docstring)."""
    reason = ignored(pod, config)
    if reason:
        return Outcome(skipped=reason)
    try:
        if not await _namespace_selected(pod, kube_, config):
            return Outcome(skipped=f"namespace labels do not match {config.namespace_selector}")
        chain = await owners.resolve_owners(pod, kube_)
    except base.GroupingError as exc:
        await _warn(kube_, (pod,), exc)
        return Outcome(error=str(exc))
    except ApiError as exc:
        if fields.metadata(pod).get("deletionTimestamp"):
            return Outcome(skipped=f"terminating pod; owner lookup failed: {exc}")
        raise await _retryable(kube_, pod, exc) from exc
    skipping = external.skipped_by(chain.owners)
    if skipping is not None:
        return Outcome(skipped=external.reason(skipping))
    top: Mapping[str, Any] = chain.top
    try:
        full = await _full_chain(chain, kube_)
        top = full[-1] if full else pod
        ctx = await _context(pod, full, kube_, groupers, config)
        spec = groupers.group(ctx)
        applied = await applying.apply(spec, pod, kube_, ctx.settings)
    except base.GroupingError as exc:
        await _warn(kube_, (pod, top), exc)
        return Outcome(error=str(exc))
    except ApiError as exc:
        raise await _retryable(kube_, pod, exc) from exc
    return Outcome(applied=applied)


async def _namespace_selected(
    pod: Mapping[str, Any], kube_: KubeReader, config: settings.PodGrouperSettings
) -> bool:
    if config.namespace_selector.is_empty:
        return True
    namespace = await kube_.get_metadata("v1", "Namespace", "", fields.namespace(pod))
    return config.namespace_selector.matches(fields.labels(namespace))


async def _full_chain(chain: owners.OwnerChain, kube_: KubeReader) -> tuple[Object, ...]:
    """The owner chain with the top owner and the owner below it read in full.

    Adapters read the spec of the top owner, and wrapper adapters (Argo, TrainJob) and
    Ray (a RayJob's RayCluster) also that of the owner right below it; the rest stays
    metadata, which is all the priority and preemptibility rules read.
    """
    result = list(chain.owners)
    for index in range(max(len(result) - 2, 0), len(result)):
        ref = ObjectRef.of(result[index])
        result[index] = await kube_.get(ref.api_version, ref.kind, ref.namespace, ref.name)
    return tuple(result)


async def _context(
    pod: Mapping[str, Any],
    chain: tuple[Object, ...],
    kube_: KubeReader,
    groupers: registry.GrouperRegistry,
    config: settings.PodGrouperSettings,
) -> base.GroupingContext:
    """The grouping input, with the related objects the grouper declares already read."""
    classes = await kube_.list(PRIORITY_CLASS_API, "PriorityClass", "")
    ctx = base.GroupingContext(
        top_owner=chain[-1] if chain else pod,
        pod=pod,
        owners=chain,
        priority_classes=frozenset(fields.name(c) for c in classes),
        default_priorities=await _default_priorities(kube_, config),
        settings=config.grouping(),
    )
    grouper = groupers.grouper_for(ctx)
    if not isinstance(grouper, base.NeedsRelatedObjects):
        return ctx
    lookup = lookups.FetchedLookup()
    # a grouper may name more objects once it sees the first ones (a parent's parent)
    for _ in range(RELATED_ROUNDS):
        if not await lookup.fetch(grouper.related_objects(ctx), kube_):
            break
        ctx = dataclasses.replace(ctx, lookup=lookup)
    return dataclasses.replace(ctx, lookup=lookup)


async def _default_priorities(
    kube_: KubeReader, config: settings.PodGrouperSettings
) -> tuple[base.DefaultPriority, ...]:
    """The default-priorities ConfigMap's entries; a missing ConfigMap disables them."""
    if not config.default_priorities_configmap_name:
        return ()
    try:
        configmap = await kube_.get(
            "v1",
            "ConfigMap",
            config.default_priorities_configmap_namespace,
            config.default_priorities_configmap_name,
        )
    except NotFoundError:
        return ()
    return resolution.default_priorities(configmap)


async def _warn(kube_: KubeWriter, objects: tuple[Mapping[str, Any], ...], exc: Exception) -> None:
    """A ``PodGrouperWarning`` event on each distinct object (pod, then top owner)."""
    seen: set[str] = set()
    for obj in objects:
        uid = fields.uid(obj) or fields.describe(obj)
        if uid in seen:
            continue
        seen.add(uid)
        await kube_.create_event(obj, WARNING, WARNING_REASON, str(exc))


async def _retryable(kube_: KubeWriter, pod: Mapping[str, Any], exc: ApiError) -> RetryableError:
    """The error to raise for ``exc``; a non-transient one is reported on the pod first."""
    if not exc.retryable:
        try:
            await _warn(kube_, (pod,), exc)
        except ApiError as event_error:
            return RetryableError(fields.describe(pod), event_error)
    return RetryableError(fields.describe(pod), exc)
