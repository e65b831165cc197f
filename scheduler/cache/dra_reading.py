"""Reading DRA objects (``resource.k8s.io/v1``) and pods' ``spec.resourceClaims`` into records.

Why: the cache parses each ResourceClaim, ResourceSlice and DeviceClass once, as it
arrives; the DRA plugin works on the frozen records of :mod:`scheduler.api.dra`.
A malformed object raises :class:`FieldError` (the cache reports it, naming the
field, and serves the rest); a well-formed object podmuster cannot use (a CEL
expression that does not compile, a ``firstAvailable`` request) is kept with its
``problem``, so the pods that use it are told why they wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from crds.quantities import parse_quantity
from scheduler.api.dra import (
    ALL,
    EXACT_COUNT,
    AllocatedDevice,
    Device,
    DeviceClassInfo,
    DeviceConstraintInfo,
    DeviceRequestInfo,
    ResourceClaimInfo,
)
from scheduler.api.dra_cel import CelError, compile_selector
from scheduler.cache.parsing import FieldError
from scheduler.cache.parsing import field_map as _map
from scheduler.cache.parsing import field_string as _string
from scheduler.cache.reading import meta_of, uid_of


def _list(raw: Any, field: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise FieldError(field, f"expected a list, got {shown(raw)}")
    return list(raw)


def _selectors(raw: Any, field: str) -> tuple[tuple[str, ...], str]:
    """The CEL expressions of a selector list, and the first compile problem ("" if none)."""
    expressions: list[str] = []
    problem = ""
    for i, selector in enumerate(_list(raw, field)):
        where = f"{field}[{i}].cel.expression"
        cel = _map(_map(selector, f"{field}[{i}]").get("cel"), f"{field}[{i}].cel")
        expression = _string(cel.get("expression"), where)
        try:
            compile_selector(expression)
        except CelError as exc:
            problem = problem or f"{where}: invalid CEL expression: {exc}"
        expressions.append(expression)
    return tuple(expressions), problem


def read_device_class(body: Mapping[str, Any]) -> DeviceClassInfo:
    spec = _map(body.get("spec"), "spec")
    selectors, problem = _selectors(spec.get("selectors"), "spec.selectors")
    name = str(meta_of(body).get("name") or "")
    if problem:
        problem = f"deviceclass {name!r} {problem}"
    return DeviceClassInfo(name=name, selectors=selectors, problem=problem)


def _exact(raw: Any, name: str, where: str) -> tuple[DeviceRequestInfo, str]:
    """An ``exactly`` request, or one ``firstAvailable`` alternative, at ``where``."""
    body = _map(raw, where)
    mode = _string(body.get("allocationMode"), f"{where}.allocationMode") or EXACT_COUNT
    if mode not in (EXACT_COUNT, ALL):
        raise FieldError(
            f"{where}.allocationMode", f"expected ExactCount or All, got {shown(mode)}"
        )
    count = body.get("count", 1 if mode == EXACT_COUNT else 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise FieldError(f"{where}.count", f"expected a non-negative integer, got {shown(count)}")
    selectors, problem = _selectors(body.get("selectors"), f"{where}.selectors")
    info = DeviceRequestInfo(
        name=name,
        device_class=_string(body.get("deviceClassName"), f"{where}.deviceClassName"),
        selectors=selectors,
        mode=mode,
        count=max(count, 1) if mode == EXACT_COUNT else 0,
        field=where,
    )
    return info, problem


def _request(raw: Any, field: str) -> tuple[DeviceRequestInfo, str]:
    request = _map(raw, field)
    name = _string(request.get("name"), f"{field}.name")
    if request.get("firstAvailable") is None:
        return _exact(request.get("exactly"), name, f"{field}.exactly")
    alternatives: list[DeviceRequestInfo] = []
    problem = ""
    for i, raw_sub in enumerate(_list(request.get("firstAvailable"), f"{field}.firstAvailable")):
        where = f"{field}.firstAvailable[{i}]"
        sub_name = _string(_map(raw_sub, where).get("name"), f"{where}.name")
        alternative, why = _exact(raw_sub, f"{name}/{sub_name}", where)
        alternatives.append(alternative)
        problem = problem or why
    if not alternatives:
        raise FieldError(f"{field}.firstAvailable", "expected at least one alternative")
    first = alternatives[0]
    info = DeviceRequestInfo(
        name=name,
        device_class=first.device_class,
        mode=first.mode,
        count=first.count,
        field=f"{field}.firstAvailable",
        alternatives=tuple(alternatives),
    )
    return info, problem


def _allocated(raw: Any, field: str) -> AllocatedDevice:
    result = _map(raw, field)
    return AllocatedDevice(
        request=_string(result.get("request"), f"{field}.request"),
        driver=_string(result.get("driver"), f"{field}.driver"),
        pool=_string(result.get("pool"), f"{field}.pool"),
        device=_string(result.get("device"), f"{field}.device"),
    )


def _constraint(raw: Any, field: str) -> tuple[DeviceConstraintInfo | None, str]:
    body = _map(raw, field)
    requests = tuple(
        _string(r, f"{field}.requests[{i}]")
        for i, r in enumerate(_list(body.get("requests"), f"{field}.requests"))
    )
    match = _string(body.get("matchAttribute"), f"{field}.matchAttribute")
    distinct = _string(body.get("distinctAttribute"), f"{field}.distinctAttribute")
    if bool(match) == bool(distinct):
        raise FieldError(field, "expected one of matchAttribute, distinctAttribute")
    attribute = match or distinct
    if "/" not in attribute:
        where = f"{field}.{'matchAttribute' if match else 'distinctAttribute'}"
        return None, f"{where}: expected a fully qualified name (<domain>/<name>)"
    return DeviceConstraintInfo(requests, attribute, distinct=bool(distinct)), ""


def read_resource_claim(body: Mapping[str, Any]) -> ResourceClaimInfo:
    meta = meta_of(body)
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    devices = _map(_map(body.get("spec"), "spec").get("devices"), "spec.devices")
    requests: list[DeviceRequestInfo] = []
    problem = ""
    for i, raw in enumerate(_list(devices.get("requests"), "spec.devices.requests")):
        request, why = _request(raw, f"spec.devices.requests[{i}]")
        requests.append(request)
        problem = problem or why
    constraints: list[DeviceConstraintInfo] = []
    for i, raw in enumerate(_list(devices.get("constraints"), "spec.devices.constraints")):
        constraint, why = _constraint(raw, f"spec.devices.constraints[{i}]")
        if constraint is not None:
            constraints.append(constraint)
        problem = problem or why
    status = _map(body.get("status"), "status")
    allocation = status.get("allocation")
    allocated: tuple[AllocatedDevice, ...] | None = None
    node_selector = None
    if allocation is not None:
        allocation = _map(allocation, "status.allocation")
        field = "status.allocation.devices.results"
        devices_done = _map(allocation.get("devices"), "status.allocation.devices")
        results = _list(devices_done.get("results"), field)
        allocated = tuple(_allocated(r, f"{field}[{i}]") for i, r in enumerate(results))
        selector = allocation.get("nodeSelector")
        node_selector = _map(selector, "status.allocation.nodeSelector") if selector else None
    reserved = tuple(
        _string(_map(ref, f"status.reservedFor[{i}]").get("uid"), f"status.reservedFor[{i}].uid")
        for i, ref in enumerate(_list(status.get("reservedFor"), "status.reservedFor"))
    )
    if problem:
        problem = f"resourceclaim {namespace}/{name} {problem}"
    return ResourceClaimInfo(
        namespace=namespace,
        name=name,
        uid=uid_of(body),
        requests=tuple(requests),
        constraints=tuple(constraints),
        allocated=allocated,
        node_selector=node_selector,
        reserved_for=reserved,
        deleting=bool(meta.get("deletionTimestamp")),
        problem=problem,
    )


def _attribute(raw: Any, field: str) -> Any:
    value = _map(raw, field)
    for kind in ("bool", "int", "string", "version"):
        if kind in value:
            return value[kind]
    for kind in ("bools", "ints", "strings", "versions"):
        if kind in value:
            return tuple(_list(value[kind], f"{field}.{kind}"))
    raise FieldError(field, "expected one of bool, int, string, version (or a list of them)")


def _capacity(raw: Any, field: str) -> Any:
    value = _map(raw, field).get("value")
    try:
        return parse_quantity(str(value))
    except (ValueError, TypeError) as exc:
        raise FieldError(f"{field}.value", f"expected a quantity, got {shown(value)}") from exc


def read_resource_slice(body: Mapping[str, Any]) -> tuple[Device, ...]:
    """The slice's devices, each with the slice's (or its own) node scope."""
    spec = _map(body.get("spec"), "spec")
    driver = _string(spec.get("driver"), "spec.driver")
    pool = _string(_map(spec.get("pool"), "spec.pool").get("name"), "spec.pool.name")
    node_name = _string(spec.get("nodeName"), "spec.nodeName")
    selector = spec.get("nodeSelector")
    all_nodes = bool(spec.get("allNodes"))
    if not node_name and not selector and not all_nodes and not spec.get("perDeviceNodeSelection"):
        raise FieldError("spec", "expected one of nodeName, nodeSelector, allNodes")
    devices: list[Device] = []
    for i, raw in enumerate(_list(spec.get("devices"), "spec.devices")):
        field = f"spec.devices[{i}]"
        device = _map(raw, field)
        attributes = {
            str(k): _attribute(v, f"{field}.attributes[{k}]")
            for k, v in _map(device.get("attributes"), f"{field}.attributes").items()
        }
        capacity = {
            str(k): _capacity(v, f"{field}.capacity[{k}]")
            for k, v in _map(device.get("capacity"), f"{field}.capacity").items()
        }
        own_selector = device.get("nodeSelector")
        devices.append(
            Device(
                driver=driver,
                pool=pool,
                name=_string(device.get("name"), f"{field}.name"),
                attributes=attributes,
                capacity=capacity,
                node_name=_string(device.get("nodeName"), f"{field}.nodeName") or node_name,
                node_selector=_map(own_selector or selector, "spec.nodeSelector") or None,
                all_nodes=bool(device.get("allNodes")) or all_nodes,
            )
        )
    return tuple(devices)


def pod_resource_claims(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[tuple[str, str], ...]:
    """``(entry name, ResourceClaim name)`` per ``spec.resourceClaims`` entry.

    A template entry's claim is the one the ResourceClaim controller created, named
    in ``status.resourceClaimStatuses``; "" until it exists.
    """
    entries = _list(spec.get("resourceClaims"), "spec.resourceClaims")
    if not entries:
        return ()
    generated = {
        _string(s.get("name"), "status.resourceClaimStatuses[].name"): _string(
            s.get("resourceClaimName"), "status.resourceClaimStatuses[].resourceClaimName"
        )
        for s in (
            _map(x, f"status.resourceClaimStatuses[{i}]")
            for i, x in enumerate(
                _list(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")
            )
        )
    }
    claims: list[tuple[str, str]] = []
    for i, raw in enumerate(entries):
        field = f"spec.resourceClaims[{i}]"
        entry = _map(raw, field)
        name = _string(entry.get("name"), f"{field}.name")
        claim = _string(entry.get("resourceClaimName"), f"{field}.resourceClaimName")
        template = _string(
            entry.get("resourceClaimTemplateName"), f"{field}.resourceClaimTemplateName"
        )
        if not name or bool(claim) == bool(template):
            raise FieldError(
                field, "expected a name and one of resourceClaimName, resourceClaimTemplateName"
            )
        claims.append((name, claim or generated.get(name, "")))
    return tuple(claims)
