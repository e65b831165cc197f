"""Argo Workflows: skip the Workflow, group what it runs; synthesize its step pods.

Why this module exists: a Workflow is a wrapper.  Pods it owns directly (container,
script and resource steps) each become their own PodGroup (``pg-<pod>-<podUID>``),
while workloads it creates with ``setOwnerReference`` (a Job, a PyTorchJob, ...) are
grouped by their own adapter; the Workflow's labels and annotations (e.g. the queue)
fill what the grouped object lacks (docs/semantics.md §4.3, skip-top-owner — the grouper
is :class:`integrations.skipping.SkipTopOwnerGrouper`).  This module synthesizes the
pods Argo's controller would create by walking the entrypoint's steps and DAG tasks.

A template that calls itself (directly or through others, e.g. ``dag-coinflip``'s
``coinflip``) recurses until a ``when`` decided at run time stops it, so how many pods
it makes cannot be known from the manifest: the walk goes through it once, does not
follow the call back into it, and reports a warning naming the template.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from crds.errors import shown
from integrations import base, fields, templates

WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
NODE_NAME = "workflows.argoproj.io/node-name"
_LEAF_KINDS = ("container", "script", "containerSet", "resource")
_MAX_DEPTH = 20


def _fan_out(wf: base.RawObject, step: Mapping[str, Any], at: str) -> int:
    """How often the step (at field path ``at``) runs: its ``withItems``, its
    ``withSequence.count`` (a count like any replica count; a parameter such as
    ``{{inputs.parameters.n}}`` is decided at run time and read as one), else once."""
    items = step.get("withItems")
    if isinstance(items, list):
        return len(items)
    sequence = step.get("withSequence")
    if isinstance(sequence, Mapping) and fields.parse_int(sequence.get("count")) is not None:
        return templates.count(wf, sequence.get("count"), f"{at}.withSequence.count", text=True)
    return 1


def _calls(
    wf: base.RawObject, template: Mapping[str, Any], at: str
) -> list[tuple[str, Mapping[str, Any]]]:
    """The steps (flattened) or DAG tasks a template (at field path ``at``) calls, each
    with its own field path.

    ``steps`` must be a list of lists, ``dag`` a map and its ``tasks`` a list, and each
    step or task a map: anything else is an error naming its place in the template
    (Argo refuses such a Workflow; read as no calls, its pods would be lost unsaid).
    """
    if template.get("steps") is not None:
        steps = fields.get_list(wf, "steps", within=template, prefix=f"{at}.")
        for i, group in enumerate(steps):
            if not isinstance(group, list):
                raise base.GroupingError(
                    fields.describe(wf), f"{at}.steps[{i}]", f"expected a list, got {shown(group)}"
                )
        found = [
            (f"{at}.steps[{i}][{j}]", step)
            for i, group in enumerate(steps)
            for j, step in enumerate(group)
        ]
    else:
        fields.get_mapping(wf, "dag", within=template, prefix=f"{at}.")
        tasks = fields.get_list(wf, "dag.tasks", within=template, prefix=f"{at}.")
        found = [(f"{at}.dag.tasks[{i}]", task) for i, task in enumerate(tasks)]
    for path, call in found:
        if not isinstance(call, Mapping):
            raise base.GroupingError(
                fields.describe(wf), path, f"expected a map, got {shown(call)}"
            )
    return found


_Templates = Mapping[str, tuple[str, Mapping[str, Any]]]
"""A Workflow's templates by name, each with its field path."""


def _leaf_count(wf: base.RawObject, by_name: _Templates, entry: str) -> int:
    """The pod-running nodes :func:`leaf_nodes` walks to from ``entry``, multiplied out
    from the fan-outs without listing them (nested sequences multiply)."""

    @functools.cache
    def count(template_name: str, path: tuple[str, ...]) -> int:
        at, template = by_name.get(template_name, ("", None))
        if template_name in path or template is None or len(path) > _MAX_DEPTH:
            return 0  # not followed, or an error the walk names
        if any(kind in template for kind in _LEAF_KINDS):
            return 1
        inner = (*path, template_name)
        return sum(
            _fan_out(wf, call, where) * count(str(call.get("template")), inner)
            for where, call in _calls(wf, template, at)
        )

    return count(entry, ())


def leaf_nodes(
    wf: base.RawObject, warn: templates.Warn = templates.ignore_warning
) -> list[tuple[str, Mapping[str, Any]]]:
    """``(node name, template)`` for every pod-running node reachable from the entrypoint;
    a call back into a template being walked is not followed (reported to ``warn``).
    Within :func:`templates.pod_budget`, more nodes than the workload may have pods is
    refused before they are listed."""
    listed = fields.get_list(wf, "spec.templates")
    for i, t in enumerate(listed):
        if not isinstance(t, Mapping):  # Argo refuses the Workflow; not skipped in silence
            raise base.GroupingError(
                fields.describe(wf), f"spec.templates[{i}]", f"expected an object, got {shown(t)}"
            )
    by_name = {str(t.get("name")): (f"spec.templates[{i}]", t) for i, t in enumerate(listed)}
    entry = fields.get(wf, "spec.entrypoint") or next(iter(by_name), None)
    result: list[tuple[str, Mapping[str, Any]]] = []
    recursive: dict[str, None] = {}

    def walk(template_name: str, node: str, depth: int, path: tuple[str, ...]) -> None:
        if template_name in path:
            recursive[template_name] = None
            return
        at, template = by_name.get(template_name, ("", None))
        if template is None:
            raise base.GroupingError(
                fields.describe(wf), "spec.templates", f"template {template_name!r} not found"
            )
        if depth > _MAX_DEPTH:
            raise base.GroupingError(fields.describe(wf), "spec.templates", "nesting too deep")
        if any(kind in template for kind in _LEAF_KINDS):
            result.append((node, template))
            return
        for where, call in _calls(wf, template, at):
            fan_out = _fan_out(wf, call, where)
            for item in range(fan_out):
                suffix_ = f"({item})" if fan_out > 1 else ""
                walk(
                    str(call.get("template")),
                    f"{node}.{call.get('name')}{suffix_}",
                    depth + 1,
                    (*path, template_name),
                )

    if entry is not None:
        templates.expect_pods(_leaf_count(wf, by_name, str(entry)))
        walk(str(entry), fields.name(wf), 0, ())
    for name in recursive:
        warn(
            base.GroupingWarning(
                fields.describe(wf),
                "spec.templates",
                f"template {name!r} calls itself; how often it recurses is decided at run"
                " time, so its pods are synthesized for one pass only",
            )
        )
    return result


def _pod_for(
    wf: base.RawObject, node: str, template: Mapping[str, Any], single: bool
) -> dict[str, Any]:
    name = fields.name(wf)
    pod_name = name if single else f"{name}-{template.get('name')}-{templates.digits(node, 10)}"
    at = next(
        f"spec.templates[{i}]"
        for i, t in enumerate(fields.get_list(wf, "spec.templates"))
        if t is template
    )
    fields.get_mapping(wf, "spec.podMetadata")  # a map, or the error names it
    own_meta = templates.checked_template(wf, template, at).get("metadata") or {}
    labels = {
        **fields.get_string_map(wf, "spec.podMetadata.labels"),
        **dict(own_meta.get("labels") or {}),
    }
    notes = {
        **fields.get_string_map(wf, "spec.podMetadata.annotations"),
        **dict(own_meta.get("annotations") or {}),
    }
    step = "container" if template.get("container") else "script"
    container = template.get(step) or {}
    if not isinstance(container, Mapping):
        raise base.GroupingError(
            fields.describe(wf), f"{at}.{step}", f"expected an object, got {shown(container)}"
        )
    container = dict(container)
    container.setdefault("name", "main")
    spec: dict[str, Any] = {"containers": [container]}
    scheduler = template.get("schedulerName") or fields.get(wf, "spec.schedulerName")
    if scheduler:
        spec["schedulerName"] = scheduler
    priority = template.get("priorityClassName") or fields.get(wf, "spec.podPriorityClassName")
    if priority:
        spec["priorityClassName"] = priority
    return templates.make_pod(
        {"metadata": {"labels": labels, "annotations": notes}, "spec": spec},
        pod_name,
        wf,
        labels={WORKFLOW_LABEL: name},
        annotations={NODE_NAME: node},
    )


def _created_resource(
    wf: base.RawObject, template: Mapping[str, Any], expand: templates.Expand
) -> list[dict[str, Any]]:
    resource = template.get("resource")
    if not isinstance(resource, Mapping) or not resource.get("setOwnerReference"):
        return []
    if resource.get("action", "create") not in ("create", "apply"):
        return []
    manifest = yaml.safe_load(str(resource.get("manifest") or ""))
    if not isinstance(manifest, dict):
        return []
    meta = dict(manifest.get("metadata") or {})
    meta.setdefault("namespace", fields.namespace(wf))
    meta["ownerReferences"] = [templates.controller_ref(wf)]
    child = templates.normalized({**manifest, "metadata": meta})
    return [child, *expand(child)]


def synthesize_workflow(
    wf: base.RawObject, expand: templates.Expand, warn: templates.Warn = templates.ignore_warning
) -> list[dict[str, Any]]:
    nodes = leaf_nodes(wf, warn)
    result: list[dict[str, Any]] = []
    for node, template in nodes:
        result.append(_pod_for(wf, node, template, single=len(nodes) == 1))
        result.extend(_created_resource(wf, template, expand))
    return result
