"""Building blocks for pod synthesis: stable names and uids, objects from templates.

Why this module exists: offline grouping (``podmuster group``, the simulator) has
to invent the objects a controller would create — intermediate owners and pods —
and must do so deterministically so outputs are reproducible.  Uids are UUIDv5 of
the object's identity; "random" name suffixes are hashes of the parent uid and the
child's role.  Per-kind hooks compose these helpers.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from crds import metadata as object_metadata
from crds.errors import shown
from integrations import base, fields

_UID_NAMESPACE = uuid.UUID("6f1d3c52-4a8e-4f63-9b7a-5c2e8d0a1b94")
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' random suffixes
DEFAULT_NAMESPACE = "default"

CLUSTER_SCOPED_KINDS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("scheduling.run.ai", "Queue"),
        ("kai.scheduler", "Topology"),
        ("kai.scheduler", "SchedulingShard"),
        ("kai.scheduler", "Config"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    }
)

Expand = Callable[[base.RawObject], list[dict[str, Any]]]
"""Synthesize the children of an object (used by hooks that create other workloads)."""

Hook = Callable[[base.RawObject, Expand], list[dict[str, Any]]]
"""A per-kind synthesis hook: the objects the kind's controller creates, pods included."""

Warn = Callable[[base.GroupingWarning], None]
"""Where a hook reports what it could not synthesize faithfully (never silent guesses)."""


def ignore_warning(_warning: base.GroupingWarning) -> None:
    """The :data:`Warn` of callers that do not collect warnings."""


def stable_uid(api_version: str, kind: str, namespace: str, name: str) -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, f"{api_version}/{kind}/{namespace}/{name}"))


def suffix(seed: str, length: int = 5) -> str:
    """A Kubernetes-style random-looking suffix, derived from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def generated_name(stem: str, seed: str, length: int = 5) -> str:
    """``<stem>-<suffix>``, the name a controller's ``generateName`` gives a child, with
    the :func:`suffix` of ``seed``; within :func:`pod_budget` unique in the workload:
    when the name is already taken (27^5 suffixes collide at about a thousand pods),
    another suffix is drawn, as a controller retries on a name conflict, so the same
    workload always gets the same names."""
    name = f"{stem}-{suffix(seed, length)}"
    budget = _BUDGET.get()
    if budget is None:
        return name
    retry = 0
    while name in budget.names:
        retry += 1
        name = f"{stem}-{suffix(f'{seed}#{retry}', length)}"
    budget.names.add(name)
    return name


def digits(seed: str, length: int = 8) -> str:
    """A decimal string of ``length`` digits derived from ``seed``."""
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    return f"{value % 10**length:0{length}d}"


def is_cluster_scoped(obj: base.RawObject) -> bool:
    gvk = base.GroupVersionKind.of(obj)
    return (gvk.group, gvk.kind) in CLUSTER_SCOPED_KINDS


def normalized(obj: base.RawObject) -> dict[str, Any]:
    """A deep copy with namespace, name (from ``generateName``) and uid filled in."""
    result = copy.deepcopy(dict(obj))
    meta = dict(fields.metadata(obj))
    if not meta.get("namespace") and not is_cluster_scoped(obj):
        meta["namespace"] = DEFAULT_NAMESPACE
    if not meta.get("name"):
        # generateName, else the kind: the API server would reject a nameless object.
        stem = meta.get("generateName") or f"{str(obj.get('kind', 'object')).lower()}-"
        seed = f"{obj.get('kind')}/{meta.get('namespace', '')}/{stem}"
        meta["name"] = f"{stem}{suffix(seed)}"
    if not meta.get("uid"):
        meta["uid"] = stable_uid(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
        )
    result["metadata"] = meta
    return result


def controller_ref(owner: base.RawObject) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": fields.name(owner),
        "uid": fields.uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make_object(
    api_version: str,
    kind: str,
    name: str,
    owner: base.RawObject,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An object named ``name`` in the owner's namespace, controlled by ``owner``."""
    namespace = fields.namespace(owner)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": stable_uid(api_version, kind, namespace, name),
        "ownerReferences": [controller_ref(owner)],
    }
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if spec is not None:
        body["spec"] = copy.deepcopy(dict(spec))
    return body


@contextlib.contextmanager
def read_from(owner: base.RawObject, child: base.RawObject, spec_at: str) -> Iterator[None]:
    """Name the workload the user wrote, not the object made from it, in errors raised
    while ``child`` is expanded: ``child``'s ``spec`` is ``owner``'s field ``spec_at``, so a
    problem at the child's ``spec.replicas`` is one at the owner's ``{spec_at}.replicas``
    (a Deployment's own ``spec.replicas``; a RayJob's ``spec.rayClusterSpec...``)."""
    try:
        yield
    except base.GroupingError as exc:
        if exc.obj != fields.describe(child) or not (
            exc.field == "spec" or exc.field.startswith(("spec.", "spec["))
        ):
            raise
        raise base.GroupingError(
            fields.describe(owner), spec_at + exc.field[len("spec") :], exc.problem
        ) from None


def checked_template(owner: base.RawObject, raw: Any, path: str) -> Mapping[str, Any]:
    """The template (of a pod or a Job) at field ``path`` of ``owner`` (unset is empty),
    checked where the synthesis reads it: the template, its ``metadata`` and ``spec``
    must be maps, its ``labels`` and ``annotations`` maps of strings (read as an
    object's own, :func:`fields.get_string_map`), or the error names the field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise base.GroupingError(
            fields.describe(owner), path, f"expected an object, got {shown(raw)}"
        )
    for field, value in (("metadata", raw.get("metadata")), ("spec", raw.get("spec"))):
        if value is not None and not isinstance(value, Mapping):
            raise base.GroupingError(
                fields.describe(owner), f"{path}.{field}", f"expected an object, got {shown(value)}"
            )
    for key in object_metadata.METADATA_MAPS:
        fields.get_string_map(owner, f"metadata.{key}", within=raw, prefix=f"{path}.")
    return raw


def make_pod(
    template: Mapping[str, Any],
    name: str,
    owner: base.RawObject,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod from a pod template (its labels, annotations and spec) plus extra metadata;
    within :func:`pod_budget`, one pod of the workload's budget."""
    _spend_pod()
    template_meta = template.get("metadata")
    template_meta = template_meta if isinstance(template_meta, Mapping) else {}
    pod_labels = {**dict(template_meta.get("labels") or {}), **dict(labels or {})}
    pod_notes = {**dict(template_meta.get("annotations") or {}), **dict(annotations or {})}
    spec = template.get("spec")
    return make_object(
        "v1",
        "Pod",
        name,
        owner,
        labels=pod_labels,
        annotations=pod_notes,
        spec=spec if isinstance(spec, Mapping) else {},
    )


def with_template_labels(template: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """A copy of a pod template with ``labels`` added to its metadata."""
    result = copy.deepcopy(dict(template))
    meta = dict(result.get("metadata") or {})
    meta["labels"] = {**dict(meta.get("labels") or {}), **dict(labels)}
    result["metadata"] = meta
    return result


MAX_SYNTHESIZED: Final = 100_000
"""The most pods synthesized offline for one workload, however its counts multiply
(KubeRay ``replicas`` times ``numOfHosts``, JobSet ``replicas`` times Job ``parallelism``,
LWS ``replicas`` times ``size``) and add up over its groups: more is a typo (``replicas:
2147483647``), and building them would exhaust the memory. One count alone above it is
refused at once, and so is a total the hook knows from its counts before it builds a pod
(:func:`expect_pods`)."""


@dataclasses.dataclass(slots=True)
class _PodBudget:
    """The pods one workload's synthesis may still make, the counts read so far, and
    the names :func:`generated_name` has given."""

    workload: str
    left: int
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    names: set[str] = dataclasses.field(default_factory=set)


_BUDGET: contextvars.ContextVar[_PodBudget | None] = contextvars.ContextVar(
    "pod_budget", default=None
)


@contextlib.contextmanager
def pod_budget(workload: base.RawObject) -> Iterator[None]:
    """Within it, the pods :func:`make_pod` makes count against :data:`MAX_SYNTHESIZED`
    for ``workload`` (its own and those of the children its hooks expand); one more is a
    :class:`~integrations.base.GroupingError` naming ``workload`` and the counts read."""
    token = _BUDGET.set(_PodBudget(fields.describe(workload), MAX_SYNTHESIZED))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _spend_pod() -> None:
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.left -= 1
    if budget.left < 0:
        raise _over_budget(budget)


def expect_pods(pods: int) -> None:
    """Before building ``pods`` pods from the counts just read (a product of counts, a
    sum over groups): within :func:`pod_budget`, more than the workload has left is
    refused at once, with the error the pod past the budget would raise, so a workload
    of a billion pods fails before building the first 100,000."""
    budget = _BUDGET.get()
    if budget is not None and pods > budget.left:
        raise _over_budget(budget)


def _over_budget(budget: _PodBudget) -> base.GroupingError:
    return base.GroupingError(
        budget.workload,
        fields.counts_read(budget.counts),
        f"these counts, multiplied and added up over the groups, make more than the "
        f"{MAX_SYNTHESIZED} pods podmuster synthesizes offline for one workload",
    )


def count(
    obj: base.RawObject, value: Any, path: str, default: int = 1, *, text: bool = False
) -> int:
    """A replica count for synthesis; negative, non-integer or larger than
    :data:`MAX_SYNTHESIZED` values are errors naming ``path`` (a decimal string is a
    count with ``text``). Within :func:`pod_budget` a count above 1 is remembered, to be
    named if the workload's pods exceed it."""
    if value is None:
        return default
    number = fields.as_int(value, obj=obj, path=path, text=text)
    if number > MAX_SYNTHESIZED:
        raise base.GroupingError(
            fields.describe(obj),
            path,
            f"{number} is more than the {MAX_SYNTHESIZED} pods podmuster synthesizes offline",
        )
    budget = _BUDGET.get()
    if budget is not None and number > 1:
        own = fields.describe(obj) == budget.workload
        budget.counts.setdefault(path if own else f"{obj.get('kind')} {path}", number)
    return number


def flatten(groups: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [item for group in groups for item in group]
