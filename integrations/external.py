"""External PodGroups: pods the podgrouper leaves alone (``kai.scheduler/skip-podgrouper``).

Why this module exists: since KAI v0.15 a user (or another controller) can write a
PodGroup themselves and keep the podgrouper away from its pods by annotating the pod,
or any object in its owner chain, ``kai.scheduler/skip-podgrouper: "true"``.  The
podgrouper then neither writes a PodGroup nor patches the pod; the pod joins the
PodGroup its own ``pod-group-name`` annotation names.  The live podgrouper and
offline grouping ask the same question here.
"""

from __future__ import annotations

from collections.abc import Iterable

from crds.names import SKIP_PODGROUPER_ANNOTATION
from integrations import base, fields


def requests_skip(obj: base.RawObject) -> bool:
    """``obj`` carries ``kai.scheduler/skip-podgrouper: "true"`` (exactly, as KAI reads it)."""
    return fields.annotations_of(obj).get(SKIP_PODGROUPER_ANNOTATION) == "true"


def skipped_by(objs: Iterable[base.RawObject]) -> base.RawObject | None:
    """The first of ``objs`` (the pod, then its owners) that asks to be left alone."""
    return next((o for o in objs if requests_skip(o)), None)


def reason(obj: base.RawObject) -> str:
    """Why a pod is left alone, naming the object that asked."""
    return f'{fields.describe(obj)} has {SKIP_PODGROUPER_ANNOTATION}: "true" (external PodGroup)'
