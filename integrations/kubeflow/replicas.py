"""Pod synthesis for Kubeflow jobs (training-operator v1 kinds, MPI v2beta1) and Notebooks.

Why this module exists: the training operator creates ``<job>-<type>-<index>`` pods
labelled with ``training.kubeflow.org/replica-type``/``replica-index``/``job-role``,
which the PyTorch subgroups and the MPI launcher rule read; the MPI operator
(v2beta1) runs its launcher as a batch Job and creates it only once the workers are
ready when ``launcherCreationPolicy`` is ``WaitForWorkersReady``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from integrations import base, fields, templates
from integrations.kubeflow import distributed, mpi

SPEC_FIELDS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
_ROLES = {"master": "master", "chief": "master", "launcher": "launcher"}
OPERATOR_LABEL = "training.kubeflow.org/operator-name"


def _replica_labels(job: base.RawObject, replica_type: str, index: int) -> dict[str, str]:
    kind = str(job.get("kind", ""))
    labels = {
        OPERATOR_LABEL: f"{kind.lower()}-controller",
        distributed.JOB_NAME_LABEL: fields.name(job),
        distributed.REPLICA_TYPE_LABEL: replica_type.lower(),
        distributed.REPLICA_INDEX_LABEL: str(index),
    }
    role = _ROLES.get(replica_type.lower())
    if role:
        labels[distributed.JOB_ROLE_LABEL] = role
    return labels


def _replica_specs(
    job: base.RawObject, specs_field: str
) -> list[tuple[str, Mapping[str, Any], int]]:
    """``(replica type, template, replicas)`` of every replica spec of ``spec.<specs_field>``;
    a replica spec that is not a map (``Worker: 3``) is an error naming it, as it fails
    KAI's reconcile (``unstructured.NestedInt64`` of its ``replicas``): skipped, its pods
    would be lost with no word. One that is null has no pods."""
    result = []
    for replica_type, spec in fields.get_mapping(job, f"spec.{specs_field}").items():
        at = f"spec.{specs_field}.{replica_type}"
        if spec is None:
            continue
        if not isinstance(spec, Mapping):
            raise base.GroupingError(
                fields.describe(job), at, f"expected an object, got {shown(spec)}"
            )
        template = templates.checked_template(job, spec.get("template"), f"{at}.template")
        count = templates.count(job, spec.get("replicas"), f"{at}.replicas")
        result.append((str(replica_type), template, count))
    return result


def _wait_for_workers(job: base.RawObject) -> bool:
    return bool(fields.get(job, "spec.launcherCreationPolicy") == mpi.WAIT_FOR_WORKERS)


def training_pods(job: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """``<job>-<type>-<i>`` pods for every replica spec of a training-operator job."""
    specs_field = SPEC_FIELDS[str(job.get("kind"))]
    replica_specs = [
        spec
        for spec in _replica_specs(job, specs_field)
        if spec[0] != "Launcher" or not _wait_for_workers(job)
    ]
    templates.expect_pods(sum(count for _, _, count in replica_specs))
    pods = []
    for replica_type, template, count in replica_specs:
        for index in range(count):
            name = f"{fields.name(job)}-{replica_type.lower()}-{index}"
            labels = _replica_labels(job, replica_type, index)
            pods.append(templates.make_pod(template, name, job, labels=labels))
    return pods


def mpi_v2_children(job: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Worker pods ``<job>-worker-<i>`` and a launcher Job ``<job>-launcher`` with its pod."""
    replica_specs = _replica_specs(job, mpi.SPECS)
    # the launcher Job runs one pod, whatever its replicas say
    templates.expect_pods(sum(min(c, 1) if t == "Launcher" else c for t, _, c in replica_specs))
    result = []
    for replica_type, template, count in replica_specs:
        if replica_type == "Launcher":
            if _wait_for_workers(job) or count == 0:
                continue
            labels = _replica_labels(job, replica_type, 0)
            launcher = templates.make_object(
                "batch/v1",
                "Job",
                f"{fields.name(job)}-launcher",
                job,
                labels=labels,
                spec={"template": templates.with_template_labels(template, labels)},
            )
            result.extend([launcher, *expand(launcher)])
            continue
        for index in range(count):
            name = f"{fields.name(job)}-{replica_type.lower()}-{index}"
            labels = _replica_labels(job, replica_type, index)
            labels[distributed.JOB_ROLE_LABEL] = replica_type.lower()
            result.append(templates.make_pod(template, name, job, labels=labels))
    return result


def notebook_children(notebook: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """A StatefulSet ``<nb>`` with one pod ``<nb>-0``."""
    name = fields.name(notebook)
    template = templates.with_template_labels(
        templates.checked_template(
            notebook, fields.get(notebook, "spec.template"), "spec.template"
        ),
        {"notebook-name": name, "statefulset": name},
    )
    sts = templates.make_object(
        "apps/v1", "StatefulSet", name, notebook, spec={"replicas": 1, "template": template}
    )
    with templates.read_from(notebook, sts, "spec"):  # its template is the notebook's
        return [sts, *expand(sts)]
