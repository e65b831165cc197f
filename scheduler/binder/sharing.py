"""What the binder does for a fractional-GPU BindRequest: pure decisions, no API calls.

Why this module exists: a pod that asks for part of a GPU cannot request
``nvidia.com/gpu`` itself, so the device plugin never gives it a device. Instead, per
GPU group the scheduler chose, the binder keeps one **reservation pod** pinned to the
node that requests one whole ``nvidia.com/gpu``; the code inside it (the device plugin
in tests) writes the UUID of the GPU it got in the annotation
``run.ai/reserve_for_gpu_index``. Every pod of the group then sees that GPU through the
env of its ConfigMap (``NVIDIA_VISIBLE_DEVICES``, ``GPU_PORTION``, ``RUNAI_NUM_OF_GPUS``),
wired at admission.
Rules (``docs/semantics.md`` §2.4, §6 "Binder"):

1. The BindRequest has ``receivedResourceType: Fraction``, ``receivedGPU.portion`` in
   [0, 1] and one ``selectedGPUGroups`` entry per device (``receivedGPU.count``); the pod
   carries the annotation ``runai/shared-gpu-configmap`` the admission mutation writes
   (:func:`unwired`): a pod the mutation never saw has no GPU env, and bound it would run
   wired to no GPU (or, with NVIDIA's runtime as default, see every GPU), so the bind
   fails for good, as KAI's binder fails it.
2. Per group, a reservation pod must exist on the selected node: the pod labelled
   ``app=kai-resource-reservation`` and ``runai-gpu-group=<group>`` in the reservation
   namespace (:func:`is_reservation`), whoever made it (KAI's
   binder names its own ``gpu-reservation-<hash of node/group>``; :func:`find_reservation`
   picks one, as KAI's binder finds it by that label). A missing one is created as
   ``gpu-reservation-<node>-<hash of group>``, labelled ``podmuster.io/created-by=binder``
   and ``podmuster.io/scheduler-name=<the binder's scheduler name>``
   (:meth:`Settings.owner_labels`) besides KAI's labels.
3. The binder waits (requeued, never blocking a worker) until every reservation pod of
   the request reports its GPU, at most the allocation timeout; then the BindRequest
   fails for good, naming the pods that did not report.
4. Then the ConfigMaps the pod's spec reads are written (:func:`configmaps_of`; one
   another live pod owns fails the request), the pod is labelled
   ``runai-gpu-group=<first group>`` (and, with several devices,
   ``runai-gpu-group/<group>`` per group), annotated ``received-resource-type: Fraction``,
   and it is bound.

Reservation pods tolerate every taint: they are pinned by ``nodeName`` as DaemonSet pods
are, and a NoExecute taint must not evict a GPU from under the pods sharing it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from crds import gpusharing as names
from crds.bindrequest import RESOURCE_TYPE_FRACTION
from crds.errors import shown
from crds.names import APP_LABEL, CREATED_BY_LABEL, DEFAULT_SCHEDULER_NAME
from kubeapi.objects import owner_reference

__all__ = [
    "CDI_DEVICE_PREFIX",
    "DEFAULT_IMAGE",
    "Fraction",
    "Settings",
    "Step",
    "configmap",
    "configmap_of",
    "configmaps_of",
    "find_reservation",
    "foreign_owners",
    "fraction_of",
    "is_reservation",
    "pod_patch",
    "reservation_name",
    "reservation_pod",
    "reserve",
    "reserved_gpu",
    "unwired",
]

DEFAULT_IMAGE: Final = "ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.13.0"
"""An image whose process writes its GPU's UUID on its own pod (KAI's does)."""

_PREFIX: Final = "gpu-reservation-"
_HASH_LENGTH: Final = 8
_MAX_NAME: Final = 63


@dataclass(frozen=True, slots=True)
class Settings:
    """How reservation pods are made and how long they may take to report a GPU.

    ``runtime_class`` empty: the pod names no RuntimeClass. ``grace``: seconds a
    reservation pod with no user, or a sharing pod with no reservation pod, is left
    alone before the binder's sync deletes it. ``cdi``: the devices are named as CDI
    devices (``k8s.device-plugin.nvidia.com/gpu=<uuid>``) instead of bare UUIDs, for a
    container toolkit in CDI mode. ``scheduler_name``: the ``spec.schedulerName`` whose
    pods this binder serves; its reservation pods carry it (``owner_labels``).
    """

    namespace: str = names.RESERVATION_NAMESPACE
    image: str = DEFAULT_IMAGE
    runtime_class: str = ""
    timeout: float = 40.0
    grace: float = 20.0
    service_account: str = names.RESERVATION_SERVICE_ACCOUNT
    cdi: bool = False
    scheduler_name: str = DEFAULT_SCHEDULER_NAME

    def owner_labels(self) -> dict[str, str]:
        """The labels marking a reservation pod as this binder's (the chart's cleanup
        selects them too)."""
        return {CREATED_BY_LABEL: "binder", names.RESERVATION_SCHEDULER_LABEL: self.scheduler_name}

    def owns(self, pod: Mapping[str, Any]) -> bool:
        """``pod`` is a reservation pod of this binder: in its namespace, with its labels."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return is_reservation(pod, self.namespace) and all(
            labels.get(k) == v for k, v in self.owner_labels().items()
        )


def is_reservation(pod: Mapping[str, Any], namespace: str) -> bool:
    """``pod`` is a GPU reservation pod the binder trusts: labelled
    ``app=kai-resource-reservation`` (:func:`crds.gpusharing.is_reservation_labelled`)
    with a ``runai-gpu-group``, in the reservation ``namespace`` only, as KAI's binder
    lists them. A pod's labels and annotations are any user's to write: a look-alike in
    another namespace must not steer a group's pods to a GPU of its choosing."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (
        meta.get("namespace") == namespace
        and names.is_reservation_labelled(labels)
        and bool(labels.get(names.GPU_GROUP_LABEL))
    )


@dataclass(frozen=True, slots=True)
class Fraction:
    """The GPU part of a Fraction BindRequest: one group per device, each ``portion``."""

    groups: tuple[str, ...]
    portion: str


def fraction_of(request: Mapping[str, Any]) -> Fraction | str | None:
    """The request's fraction; None when it is not a Fraction; a reason when it is broken."""
    spec = request.get("spec") or {}
    if spec.get("receivedResourceType") != RESOURCE_TYPE_FRACTION:
        return None
    received = spec.get("receivedGPU") or {}
    portion = str(received.get("portion") or "")
    try:
        value = float(portion)
    except ValueError:
        value = math.nan
    # "0.00" included: a fraction below 0.005 is written so (two decimals, as KAI's
    # scheduler writes it), and KAI's binder binds it
    if not 0 <= value <= 1:
        return f"spec.receivedGPU.portion: must be a number in [0, 1], got {shown(portion)}"
    groups = tuple(str(g) for g in spec.get("selectedGPUGroups") or () if g)
    if not groups:
        return "spec.selectedGPUGroups: a Fraction BindRequest needs at least one GPU group"
    count = received.get("count")
    if count not in (None, 0) and count != len(groups):
        return (
            f"spec.selectedGPUGroups: {len(groups)} group(s) for receivedGPU.count {count} "
            "(one group per device)"
        )
    if len(set(groups)) != len(groups):
        return f"spec.selectedGPUGroups: a group is listed twice ({', '.join(groups)})"
    return Fraction(groups, portion)


def unwired(pod: Mapping[str, Any]) -> str:
    """Why ``pod`` cannot be bound to a shared GPU: it has no
    ``runai/shared-gpu-configmap`` annotation, so the pod webhook's mutation, which wires
    its container's GPU env to that ConfigMap, never saw it (``""``: it did)."""
    meta = pod.get("metadata") or {}
    if (meta.get("annotations") or {}).get(names.CONFIGMAP_ANNOTATION):
        return ""
    return (
        f"pod {meta.get('namespace')}/{meta.get('name')} asks for a shared GPU but has no "
        f"annotation {names.CONFIGMAP_ANNOTATION}: the pod webhook must mutate it at "
        "creation to wire its container's GPU env (its namespace may be excluded from the "
        "webhook, the webhook disabled, or the pod created before it); bound as it is, the "
        "container would not be limited to its GPU. Create the pod again where the webhook "
        "serves it"
    )


def reservation_name(node: str, group: str) -> str:
    """``gpu-reservation-<node>-<hash of group>``, at most 63 characters."""
    digest = hashlib.sha256(group.encode()).hexdigest()[:_HASH_LENGTH]
    room = _MAX_NAME - len(_PREFIX) - 1 - _HASH_LENGTH
    stem = node[:room].rstrip("-.")
    return f"{_PREFIX}{stem}-{digest}"


def find_reservation(
    pods: Iterable[Mapping[str, Any]], group: str, node: str, namespace: str
) -> Mapping[str, Any] | None:
    """The reservation pod holding ``group`` among ``pods``: a reservation pod
    (:func:`is_reservation`) of ``namespace`` labelled ``runai-gpu-group=<group>``,
    whoever made it, whatever its name (None: there is none).

    Of several, the one on ``node`` first, then one not being deleted, then one that
    reported its GPU, then by name, so every bind of the group uses the same GPU.
    """

    def rank(pod: Mapping[str, Any]) -> tuple[bool, bool, bool, str]:
        meta = pod.get("metadata") or {}
        return (
            str((pod.get("spec") or {}).get("nodeName") or "") != node,
            bool(meta.get("deletionTimestamp")),
            not reserved_gpu(pod),
            str(meta.get("name") or ""),
        )

    held = [
        pod
        for pod in pods
        if is_reservation(pod, namespace)
        and ((pod.get("metadata") or {}).get("labels") or {}).get(names.GPU_GROUP_LABEL) == group
    ]
    return min(held, key=rank, default=None)


def reservation_pod(node: str, group: str, settings: Settings) -> dict[str, Any]:
    """The reservation pod of ``group`` on ``node``: one whole GPU, pinned, tiny otherwise.

    It requests 2m CPU and 20Mi memory but is limited only in ``nvidia.com/gpu``: a
    memory limit could OOM-kill the reservation image (it loads NVML) and take the GPU
    from its group (KAI's requests nothing but the GPU; the requests keep this one out of
    the BestEffort class the kubelet evicts first)."""
    requests = {"cpu": "2m", "memory": "20Mi", names.GPU_RESOURCE: "1"}
    limits = {names.GPU_RESOURCE: "1"}
    spec: dict[str, Any] = {
        "nodeName": node,
        "serviceAccountName": settings.service_account,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 0,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "resource-reservation",
                "image": settings.image,
                "imagePullPolicy": "IfNotPresent",
                "resources": {"requests": requests, "limits": limits},
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {
                        "name": "POD_NAMESPACE",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                    },
                ],
            }
        ],
    }
    if settings.runtime_class:
        spec["runtimeClassName"] = settings.runtime_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": reservation_name(node, group),
            "namespace": settings.namespace,
            "labels": {
                APP_LABEL: names.RESERVATION_APP,
                names.GPU_GROUP_LABEL: group,
                **settings.owner_labels(),
            },
            "annotations": {names.DO_NOT_DISRUPT_ANNOTATION: "true"},
        },
        "spec": spec,
    }


def reserved_gpu(pod: Mapping[str, Any]) -> str:
    """The GPU UUID a reservation pod reported, or ``""``."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(names.RESERVED_GPU_ANNOTATION) or "")


Kind = Literal["create", "wait", "fail", "ready"]


@dataclass(frozen=True, slots=True)
class Step:
    """``create``: make ``pods`` first. ``wait``: a GPU is not reported yet (``reason``).
    ``fail``: give up for good (``reason``). ``ready``: ``uuids``, one per group."""

    kind: Kind
    pods: tuple[dict[str, Any], ...] = ()
    uuids: tuple[str, ...] = ()
    reason: str = ""
    timed_out: bool = False


def _where(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def reserve(
    fraction: Fraction,
    node: str,
    found: Mapping[str, Mapping[str, Any] | None],
    waited: float,
    settings: Settings,
) -> Step:
    """The next step towards ``fraction``'s GPUs on ``node``.

    ``found`` maps each group to its reservation pod (:func:`find_reservation`; None: no
    such pod); ``waited`` is how long the binder has been waiting for this request's GPUs.
    """
    missing: list[dict[str, Any]] = []
    pending: list[str] = []
    uuids: list[str] = []
    for group in fraction.groups:
        pod = found.get(group)
        if pod is None:
            missing.append(reservation_pod(node, group, settings))
            continue
        meta = pod.get("metadata") or {}
        owner_group = (meta.get("labels") or {}).get(names.GPU_GROUP_LABEL)
        if owner_group != group:
            return Step(
                "fail",
                reason=f"reservation pod {_where(pod)} belongs to GPU group {owner_group!r}, "
                f"not {group!r}",
            )
        on = str((pod.get("spec") or {}).get("nodeName") or "")
        if on != node:
            return Step(
                "fail",
                reason=f"reservation pod {_where(pod)} of GPU group {group} is on node "
                f"{on or '(none)'}, not {node}",
            )
        uuid = "" if meta.get("deletionTimestamp") else reserved_gpu(pod)
        if uuid:
            uuids.append(uuid)
        else:
            pending.append(_where(pod))
    if missing:
        return Step("create", pods=tuple(missing))
    if pending:
        what = (
            f"reservation pod(s) {', '.join(pending)} did not report a GPU (annotation "
            f"{names.RESERVED_GPU_ANNOTATION})"
        )
        if waited >= settings.timeout:
            return Step("fail", reason=f"{what} within {settings.timeout:g}s", timed_out=True)
        return Step("wait", reason=what)
    return Step("ready", uuids=tuple(uuids))


def _groups_labels(labels: Mapping[str, Any], groups: Sequence[str]) -> dict[str, Any]:
    """Labels setting the pod's groups; stale ``runai-gpu-group/*`` labels are removed."""
    patch: dict[str, Any] = {
        key: None
        for key in labels
        if key.startswith(names.MULTI_GROUP_LABEL_PREFIX)
        and key[len(names.MULTI_GROUP_LABEL_PREFIX) :] not in groups
    }
    patch[names.GPU_GROUP_LABEL] = groups[0]
    if len(groups) > 1:
        patch.update({f"{names.MULTI_GROUP_LABEL_PREFIX}{g}": g for g in groups})
    return patch


def configmap_of(pod: Mapping[str, Any]) -> str:
    """The name of ``pod``'s GPU ConfigMap: its annotation, else the default name."""
    meta = pod.get("metadata") or {}
    named = (meta.get("annotations") or {}).get(names.CONFIGMAP_ANNOTATION)
    return str(named or names.configmap_name(str(meta.get("name") or "")))


_GPU_KEYS: Final = (names.VISIBLE_DEVICES_ENV, names.GPU_PORTION_ENV, names.NUM_OF_GPUS_ENV)


@dataclass(frozen=True, slots=True)
class PodConfigMaps:
    """The GPU ConfigMaps a sharing pod reads: ``data`` get the GPU env, ``present`` need
    only exist (KAI's ``-evar`` maps, read by ``envFrom``)."""

    data: tuple[str, ...]
    present: tuple[str, ...] = ()


def configmaps_of(pod: Mapping[str, Any]) -> PodConfigMaps:
    """The ConfigMaps ``pod``'s spec makes it read its GPU from.

    ``data``: every ConfigMap a container's env reads ``NVIDIA_VISIBLE_DEVICES``,
    ``GPU_PORTION`` or ``RUNAI_NUM_OF_GPUS`` from (``configMapKeyRef``); none (a pod the
    mutation did not wire): :func:`configmap_of`. ``present``: the other ConfigMaps whose
    names start with :func:`configmap_of` that a container's ``envFrom`` or a volume
    reads, not optional: a pod admitted under KAI's contract (``<prefix>-<index>`` with
    the env, ``<prefix>-<index>-evar`` by ``envFrom``) starts only when they exist. The
    prefix keeps the binder from creating a user's own ConfigMaps.
    """
    spec = pod.get("spec") or {}
    containers = [
        c
        for section in ("initContainers", "containers")
        for c in spec.get(section) or ()
        if isinstance(c, Mapping)
    ]
    data: list[str] = []
    for container in containers:
        for entry in container.get("env") or ():
            ref = (
                ((entry.get("valueFrom") or {}).get("configMapKeyRef") or {})
                if isinstance(entry, Mapping)
                else {}
            )
            name = str(ref.get("name") or "")
            if entry.get("name") in _GPU_KEYS and name and name not in data:
                data.append(name)
    if not data:
        data.append(configmap_of(pod))
    prefix = configmap_of(pod)
    refs = [
        (entry.get("configMapRef") or {})
        for container in containers
        for entry in container.get("envFrom") or ()
        if isinstance(entry, Mapping)
    ] + [
        (volume.get("configMap") or {})
        for volume in spec.get("volumes") or ()
        if isinstance(volume, Mapping)
    ]
    present: list[str] = []
    for ref in refs:
        name = str(ref.get("name") or "") if isinstance(ref, Mapping) else ""
        if name.startswith(prefix) and not ref.get("optional") and name not in data + present:
            present.append(name)
    return PodConfigMaps(tuple(data), tuple(present))


def pod_patch(
    pod: Mapping[str, Any], fraction: Fraction, uuids: Sequence[str] = ()
) -> dict[str, Any]:
    """The merge patch marking ``pod`` as a member of ``fraction``'s groups, using the GPUs
    ``uuids`` (recorded in ``podmuster.io/gpu-uuids``)."""
    meta = pod.get("metadata") or {}
    annotations = {
        names.RECEIVED_RESOURCE_TYPE_ANNOTATION: RESOURCE_TYPE_FRACTION,
        names.CONFIGMAP_ANNOTATION: configmap_of(pod),
    }
    if uuids:
        annotations[names.GPU_UUIDS_ANNOTATION] = ",".join(uuids)
    return {
        "metadata": {
            "labels": _groups_labels(meta.get("labels") or {}, fraction.groups),
            "annotations": annotations,
        }
    }


def foreign_owners(configmap: Mapping[str, Any], pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, uid) of every Pod owning ``configmap`` that is not ``pod``.

    A sharing pod's ConfigMap name comes from admission; two live pods given the same name
    (a collision of ``generateName`` suffixes, or a name set by hand) would read one GPU
    env. The binder writes the ConfigMap over only when none of these pods still exists
    (a recreated pod of the same name, e.g. a StatefulSet's, takes its predecessor's)."""
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    return [
        (str(ref.get("name") or ""), str(ref.get("uid") or ""))
        for ref in (configmap.get("metadata") or {}).get("ownerReferences") or ()
        if ref.get("kind") == "Pod" and str(ref.get("uid") or "") != uid
    ]


CDI_DEVICE_PREFIX: Final = "k8s.device-plugin.nvidia.com/gpu="


def configmap(
    pod: Mapping[str, Any],
    fraction: Fraction | None,
    uuids: Sequence[str],
    *,
    cdi: bool = False,
    name: str = "",
) -> dict[str, Any]:
    """``pod``'s ConfigMap ``name`` (default :func:`configmap_of`): the env its container
    reads, none with ``fraction`` None (a map that need only exist). Owned by the pod, so
    it goes with it; labelled ``CREATED_BY_LABEL`` so the chart's cleanup hook finds it
    after an uninstall."""
    meta = pod.get("metadata") or {}
    data: dict[str, str] = {}
    if fraction is not None:
        data = {
            names.VISIBLE_DEVICES_ENV: ",".join(
                f"{CDI_DEVICE_PREFIX}{uuid}" if cdi else uuid for uuid in uuids
            ),
            names.GPU_PORTION_ENV: fraction.portion,
            names.NUM_OF_GPUS_ENV: fraction.portion,
        }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name or configmap_of(pod),
            "namespace": meta.get("namespace"),
            "labels": {CREATED_BY_LABEL: "binder"},
            "ownerReferences": [owner_reference({"apiVersion": "v1", "kind": "Pod", **pod})],
        },
        "data": data,
    }
