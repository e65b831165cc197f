"""Spark: driver and executor pods share one PodGroup named by ``spark-app-selector``.

Why this module exists: spark-submit in cluster mode creates a bare driver pod that
owns its executor pods, so the generic "one PodGroup per pod" rule would split one
application.  KAI names the PodGroup after the raw ``spark-app-selector`` label when
the reconciled pod carries both Spark labels (docs/semantics.md §4.3, ``v1 Pod``).
This module holds that rule and the pods the Spark operator creates for a
``SparkApplication`` (which itself is grouped by the default grouper).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from integrations import base, fields, templates

APP_NAME = "spark-app-name"
APP_SELECTOR = "spark-app-selector"
ROLE = "spark-role"


def spark_group_name(pod: base.RawObject) -> str | None:
    """The PodGroup name for a Spark pod, or ``None`` when the pod is not one."""
    pod_labels = fields.labels(pod)
    if APP_NAME in pod_labels and APP_SELECTOR in pod_labels:
        return str(pod_labels[APP_SELECTOR])
    return None


_UNITS = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
MIN_OVERHEAD_MIB = 384
OVERHEAD_FACTOR = 0.1


def _mebibytes(obj: base.RawObject, value: Any, path: str) -> int:
    """Spark memory (``512m``, ``2g``; plain numbers are MiB) in MiB."""
    text = str(value).strip().lower().removesuffix("b")
    unit = _UNITS.get(text[-1:])
    number = fields.parse_int(text[:-1] if unit is not None else text)
    if number is None or number < 0:
        raise base.GroupingError(fields.describe(obj), path, f"bad Spark memory {value!r}")
    return int(number * (unit or 1))


def _resources(app: base.RawObject, role: str) -> dict[str, Any]:
    """Requests as Spark asks for them: cores, memory plus overhead (max(384Mi, 10%)), GPUs."""
    spec = fields.get_mapping(app, f"spec.{role}")
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if spec.get("cores") is not None:
        requests["cpu"] = str(spec["cores"])
    if spec.get("coreLimit") is not None:
        limits["cpu"] = str(spec["coreLimit"])
    if spec.get("memory") is not None:
        memory = _mebibytes(app, spec["memory"], f"spec.{role}.memory")
        overhead = max(MIN_OVERHEAD_MIB, int(memory * OVERHEAD_FACTOR))
        requests["memory"] = limits["memory"] = f"{memory + overhead}Mi"
    gpu = spec.get("gpu")
    if isinstance(gpu, Mapping) and gpu.get("name"):
        requests[str(gpu["name"])] = limits[str(gpu["name"])] = str(gpu.get("quantity", 1))
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


def _template(app: base.RawObject, role: str) -> dict[str, Any]:
    spec = fields.get_mapping(app, f"spec.{role}")
    container = {
        "name": f"spark-kubernetes-{role}",
        "image": spec.get("image") or fields.get(app, "spec.image") or "",
        "resources": _resources(app, role),
    }
    pod_spec: dict[str, Any] = {"containers": [container]}
    scheduler = spec.get("schedulerName") or fields.get(app, "spec.batchScheduler")
    if scheduler:
        pod_spec["schedulerName"] = scheduler
    if spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    meta = {
        "labels": dict(fields.get_string_map(app, "labels", within=spec, prefix=f"spec.{role}.")),
        "annotations": dict(
            fields.get_string_map(app, "annotations", within=spec, prefix=f"spec.{role}.")
        ),
    }
    return {"metadata": meta, "spec": pod_spec}


def synthesize_application(app: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Driver ``<app>-driver`` (owned by the SparkApplication) and executors owned by the driver."""
    name, uid = fields.name(app), fields.uid(app)
    common = {
        APP_NAME: name,
        APP_SELECTOR: f"spark-{templates.suffix(uid, 32)}",
        "sparkoperator.k8s.io/app-name": name,
        "sparkoperator.k8s.io/launched-by-spark-operator": "true",
    }
    instances = templates.count(
        app, fields.get(app, "spec.executor.instances"), "spec.executor.instances"
    )
    templates.expect_pods(1 + instances)
    driver = templates.make_pod(
        _template(app, "driver"), f"{name}-driver", app, labels={**common, ROLE: "driver"}
    )
    stem = f"{name}-{templates.suffix(f'{uid}/executors', 16)}"
    executors = [
        templates.make_pod(
            _template(app, "executor"),
            f"{stem}-exec-{n}",
            driver,
            labels={**common, ROLE: "executor", "spark-exec-id": str(n)},
        )
        for n in range(1, instances + 1)
    ]
    return [driver, *executors]
