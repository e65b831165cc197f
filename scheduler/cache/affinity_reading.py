"""Readers for a pod's inter-pod affinity and topology spread constraints.

Why: the cache parses each pod once; these functions turn the pod's
``spec.affinity.podAffinity``/``podAntiAffinity`` and
``spec.topologySpreadConstraints`` into the engine's frozen records
(:mod:`scheduler.api.affinity`), checked as the API server checks them and
refused with a ``FieldError`` naming the field. ``matchLabelKeys`` and
``mismatchLabelKeys`` take the pod's own label values here, so the engine never
needs the pod again to know what a term selects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from scheduler.api.affinity import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    SCHEDULE_ANYWAY,
    PodAffinity,
    PodTerm,
    SpreadConstraint,
    WeightedTerm,
)
from scheduler.api.labels import IN, NOT_IN, Requirement, Selector, SelectorError, parse_selector
from scheduler.cache.parsing import MAP, FieldError

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _list(raw: Any, field: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise FieldError(field, f"expected a list, got {type(raw).__name__}")
    return list(raw)


def _selector(raw: Any, field: str) -> Selector | None:
    if raw is None:
        return None
    try:
        return parse_selector(raw)
    except SelectorError as exc:
        path = f"{field}.{exc.field}" if exc.field else field
        raise FieldError(path, exc.message) from None


def _label_keys(raw: Any, field: str) -> list[str]:
    keys = _list(raw, field)
    for i, key in enumerate(keys):
        if not isinstance(key, str) or not key:
            raise FieldError(f"{field}[{i}]", f"expected a label key, got {shown(key)}")
    return keys


def _own_values(
    keys: list[str], operator: str, labels: Mapping[str, str]
) -> tuple[Requirement, ...]:
    """``key <operator> (the pod's value)`` for each key the pod carries (others are ignored)."""
    return tuple((key, operator, (labels[key],)) for key in keys if key in labels)


def _term(raw: Any, field: str, namespace: str, labels: Mapping[str, str]) -> PodTerm:
    if not isinstance(raw, MAP):
        raise FieldError(field, "expected a map")
    topology_key = raw.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise FieldError(f"{field}.topologyKey", "required")
    selector = _selector(raw.get("labelSelector"), f"{field}.labelSelector")
    match_keys = _label_keys(raw.get("matchLabelKeys"), f"{field}.matchLabelKeys")
    mismatch_keys = _label_keys(raw.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys")
    if (match_keys or mismatch_keys) and selector is None:
        raise FieldError(f"{field}.matchLabelKeys", "may not be set when labelSelector is not set")
    if selector is not None:
        selector = selector.narrowed(
            _own_values(match_keys, IN, labels) + _own_values(mismatch_keys, NOT_IN, labels)
        )
    names = _list(raw.get("namespaces"), f"{field}.namespaces")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise FieldError(
                f"{field}.namespaces[{i}]", f"expected a namespace name, got {shown(name)}"
            )
    namespace_selector = _selector(raw.get("namespaceSelector"), f"{field}.namespaceSelector")
    if not names and namespace_selector is None:
        names = [namespace]
    return PodTerm(selector, frozenset(names), namespace_selector, topology_key)


def _terms(
    raw: Any, field: str, namespace: str, labels: Mapping[str, str]
) -> tuple[tuple[PodTerm, ...], tuple[WeightedTerm, ...]]:
    """The required terms and the preferred ones (weight as given) of one affinity kind."""
    if raw is None:
        return (), ()
    if not isinstance(raw, MAP):
        raise FieldError(field, "expected a map")
    required = tuple(
        _term(term, f"{field}.{_REQUIRED}[{i}]", namespace, labels)
        for i, term in enumerate(_list(raw.get(_REQUIRED), f"{field}.{_REQUIRED}"))
    )
    preferred: list[WeightedTerm] = []
    for i, item in enumerate(_list(raw.get(_PREFERRED), f"{field}.{_PREFERRED}")):
        path = f"{field}.{_PREFERRED}[{i}]"
        if not isinstance(item, MAP):
            raise FieldError(path, "expected a map")
        weight = item.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise FieldError(
                f"{path}.weight", f"must be an integer from 1 to 100, got {shown(weight)}"
            )
        term = _term(item.get("podAffinityTerm"), f"{path}.podAffinityTerm", namespace, labels)
        preferred.append(WeightedTerm(weight, term))
    return required, tuple(preferred)


def read_pod_affinity(
    spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> PodAffinity | None:
    """The pod's inter-pod affinity, or None when it has none (most pods)."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, MAP):
        return None
    together = affinity.get("podAffinity")
    apart = affinity.get("podAntiAffinity")
    if together is None and apart is None:
        return None
    field = "spec.affinity"
    required, preferred = _terms(together, f"{field}.podAffinity", namespace, labels)
    anti_required, anti_preferred = _terms(apart, f"{field}.podAntiAffinity", namespace, labels)
    if not (required or preferred or anti_required or anti_preferred):
        return None
    return PodAffinity(
        affinity=required,
        anti_affinity=anti_required,
        preferred=preferred + tuple(WeightedTerm(-w.weight, w.term) for w in anti_preferred),
    )


def _policy(raw: Any, field: str, default: str) -> bool:
    """``Honor`` or ``Ignore`` as a flag (True: honor)."""
    value = default if raw is None else raw
    if value not in (HONOR, IGNORE):
        raise FieldError(field, f"must be Honor or Ignore, got {shown(raw)}")
    return bool(value == HONOR)


def read_spread(spec: Mapping[str, Any], labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """The pod's ``topologySpreadConstraints`` (empty for most pods)."""
    raw = spec.get("topologySpreadConstraints")
    if not raw:
        return ()
    found: list[SpreadConstraint] = []
    for i, item in enumerate(_list(raw, "spec.topologySpreadConstraints")):
        field = f"spec.topologySpreadConstraints[{i}]"
        if not isinstance(item, MAP):
            raise FieldError(field, "expected a map")
        skew = item.get("maxSkew")
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
            raise FieldError(
                f"{field}.maxSkew", f"must be an integer of at least 1, got {shown(skew)}"
            )
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise FieldError(f"{field}.topologyKey", "required")
        when = item.get("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise FieldError(
                f"{field}.whenUnsatisfiable",
                f"must be DoNotSchedule or ScheduleAnyway, got {shown(when)}",
            )
        min_domains = item.get("minDomains")
        if min_domains is not None:
            if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1:
                raise FieldError(
                    f"{field}.minDomains",
                    f"must be an integer of at least 1, got {shown(min_domains)}",
                )
            if when != DO_NOT_SCHEDULE:
                raise FieldError(
                    f"{field}.minDomains", "may be set only when whenUnsatisfiable is DoNotSchedule"
                )
        selector = _selector(item.get("labelSelector"), f"{field}.labelSelector")
        match_keys = _label_keys(item.get("matchLabelKeys"), f"{field}.matchLabelKeys")
        if selector is not None:
            selector = selector.narrowed(_own_values(match_keys, IN, labels))
        found.append(
            SpreadConstraint(
                max_skew=skew,
                topology_key=key,
                hard=when == DO_NOT_SCHEDULE,
                selector=selector,
                min_domains=min_domains or 1,
                honor_node_affinity=_policy(
                    item.get("nodeAffinityPolicy"), f"{field}.nodeAffinityPolicy", HONOR
                ),
                honor_taints=_policy(
                    item.get("nodeTaintsPolicy"), f"{field}.nodeTaintsPolicy", IGNORE
                ),
            )
        )
    return tuple(found)
