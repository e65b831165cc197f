"""Pod synthesis for KubeRay: the RayCluster a RayJob/RayService creates, and its pods.

Why this module exists: KubeRay names the head ``<cluster>-head-<x>`` and workers
``<cluster>-<group>-worker-<x>``, labels them ``ray.io/group`` (``headgroup`` for the
head) and ``ray.io/node-type``, and creates ``replicas x numOfHosts`` pods per
unsuspended worker group; RayJob and RayService first create a RayCluster
``<name>-<x>`` from their embedded spec.  The Ray adapter maps pods by these labels.
The RayJob submitter (K8sJobMode) is not synthesized: KubeRay disables it with KAI
because it cannot join the gang (docs/semantics.md §12).  A RayJob with
``spec.clusterSelector`` runs on a RayCluster that exists already: KubeRay creates no
cluster for it, so nothing is synthesized and a warning says where its pods are.
A RayCronJob creates a RayJob ``<cron>-<x>`` from ``spec.jobTemplate`` on each tick;
one run is synthesized (none, with a warning, while ``spec.suspend`` is true).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from crds.names import DEFAULT_SCHEDULER_NAME, QUEUE_LABEL
from integrations import base, fields, templates
from integrations.ray import clusters, cronjob, grouper

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"


def _pod_labels(cluster: base.RawObject, group: str, node_type: str) -> dict[str, str]:
    labels = {
        CLUSTER_LABEL: fields.name(cluster),
        clusters.GROUP_LABEL: group,
        NODE_TYPE_LABEL: node_type,
        "ray.io/is-ray-node": "yes",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    # KubeRay's kai-scheduler plugin copies the queue label from the cluster to its pods.
    queue = fields.labels(cluster).get(QUEUE_LABEL)
    if queue is not None:
        labels[QUEUE_LABEL] = queue
    return labels


def _stamped(cluster: base.RawObject, pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` as KubeRay's kai-scheduler batch-scheduler plugin leaves it, for a cluster
    that opts in to KAI with the queue label (the label KubeRay's KAI guide requires):
    the plugin sets every pod's ``schedulerName`` to ``kai-scheduler``, whatever the
    template says. A cluster without the label is left to the template's scheduler:
    KubeRay runs the plugin only when the operator is started with it, which a manifest
    does not show."""
    if QUEUE_LABEL in fields.labels(cluster):
        pod["spec"]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    return pod


def _worker_count(cluster: base.RawObject, group: Mapping[str, Any], path: str) -> int:
    replicas = templates.count(cluster, group.get("replicas"), f"{path}.replicas", 0)
    low = templates.count(cluster, group.get("minReplicas"), f"{path}.minReplicas", 0)
    high = group.get("maxReplicas")
    if high is not None:
        replicas = min(replicas, templates.count(cluster, high, f"{path}.maxReplicas"))
    return max(replicas, low)


def cluster_pods(cluster: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """The head and ``replicas x numOfHosts`` workers per unsuspended worker group; all
    counts are read (and their total checked) before the first pod is built."""
    name, uid = fields.name(cluster), fields.uid(cluster)
    head = "spec.headGroupSpec.template"
    head_template = templates.checked_template(cluster, fields.get(cluster, head), head)
    groups = []
    for index, group in enumerate(fields.get_list(cluster, "spec.workerGroupSpecs")):
        path = f"spec.workerGroupSpecs[{index}]"
        if not isinstance(group, Mapping):
            raise base.GroupingError(
                fields.describe(cluster), path, f"expected an object, got {shown(group)}"
            )
        if group.get("suspend") or group.get("suspended"):
            continue
        group_name = str(group.get("groupName") or f"worker-group-{index}")
        hosts = templates.count(cluster, group.get("numOfHosts"), f"{path}.numOfHosts")
        template = templates.checked_template(cluster, group.get("template"), f"{path}.template")
        groups.append((group_name, hosts, _worker_count(cluster, group, path), template))
    templates.expect_pods(1 + sum(hosts * workers for _, hosts, workers, _ in groups))
    pods = [
        _stamped(
            cluster,
            templates.make_pod(
                head_template,
                f"{name}-head-{templates.suffix(f'{uid}/head')}",
                cluster,
                labels=_pod_labels(cluster, clusters.HEAD_GROUP, "head"),
            ),
        )
    ]
    for group_name, hosts, workers, template in groups:
        for replica in range(workers):
            replica_name = templates.generated_name(
                f"{name}-{group_name}", f"{uid}/{group_name}/{replica}"
            )
            for host in range(hosts):
                labels = _pod_labels(cluster, group_name, "worker")
                if hosts > 1:
                    labels["ray.io/worker-group-replica-name"] = replica_name
                    labels["ray.io/worker-group-replica-index"] = str(replica)
                    labels["ray.io/replica-host-index"] = str(host)
                seed = f"{uid}/{group_name}/{replica}/{host}"
                pod_name = templates.generated_name(f"{name}-{group_name}-worker", seed)
                pods.append(
                    _stamped(
                        cluster, templates.make_pod(template, pod_name, cluster, labels=labels)
                    )
                )
    return pods


def owned_cluster_children(
    owner: base.RawObject, expand: templates.Expand, warn: templates.Warn
) -> list[dict[str, Any]]:
    """The RayCluster ``<name>-<x>`` a RayJob/RayService creates, and its pods."""
    kind = str(owner.get("kind"))
    selector = grouper.cluster_selector(owner)
    if selector:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
        warn(
            base.GroupingWarning(
                fields.describe(owner),
                grouper.CLUSTER_SELECTOR,
                f"runs on an existing RayCluster ({wanted}); KubeRay creates no cluster"
                " for it, so its Ray pods are grouped with that RayCluster's PodGroup"
                " (give the RayCluster too to see it); the submitter pod, if any,"
                " is grouped alone",
            )
        )
        return []
    path = grouper.EMBEDDED_SPEC[kind]
    spec = fields.get_mapping(owner, path)
    if not spec:
        raise base.GroupingError(fields.describe(owner), path, "is required")
    labels = {
        **fields.labels(owner),
        "ray.io/originated-from-crd": kind,
        "ray.io/originated-from-cr-name": fields.name(owner),
    }
    cluster = templates.make_object(
        str(owner.get("apiVersion")),
        "RayCluster",
        f"{fields.name(owner)}-{templates.suffix(fields.uid(owner))}",
        owner,
        labels=labels,
        spec=spec,
    )
    with templates.read_from(owner, cluster, path):
        return [cluster, *expand(cluster)]


def cronjob_children(
    cron: base.RawObject, expand: templates.Expand, warn: templates.Warn
) -> list[dict[str, Any]]:
    """One scheduled run of a RayCronJob: the RayJob ``<cron>-<x>``, then what it creates."""
    if fields.get(cron, "spec.suspend") is True:
        warn(
            base.GroupingWarning(
                fields.describe(cron),
                "spec.suspend",
                "suspended: KubeRay creates no RayJob for it, so there is nothing to group",
            )
        )
        return []
    template = fields.get_mapping(cron, "spec.jobTemplate")
    if not template:
        raise base.GroupingError(fields.describe(cron), "spec.jobTemplate", "is required")
    rayjob = templates.make_object(
        str(cron.get("apiVersion")),
        "RayJob",
        f"{fields.name(cron)}-{templates.suffix(fields.uid(cron))}",
        cron,
        labels={cronjob.CRONJOB_NAME_LABEL: fields.name(cron)},
        spec=template,
    )
    with templates.read_from(cron, rayjob, "spec.jobTemplate"):
        return [rayjob, *expand(rayjob)]
