"""Builders for inter-pod affinity and spread worlds, and an independent rule checker.

The builders write the stanzas as Kubernetes objects (plain dicts). The checker,
:func:`violations`, reads the objects and a cycle's result and tests every required
rule from first principles on the final placement, with its own small label-selector
matcher: it shares no code with the engine's plugin, so a scenario or property that
uses it checks the plugin rather than echoing it (docs/semantics.md §14).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.cycle import CycleResult
from tests.kits import worlds
from tests.kits.worlds import NAMESPACE, Item, flatten, node

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

Obj = dict[str, Any]


def zoned(name: str, zone: str, **node_args: Any) -> Obj:
    """A node labelled with its hostname and ``zone``."""
    labels = {HOST: name, ZONE: zone, **node_args.pop("labels", {})}
    return node(name, labels=labels, **node_args)


def term(
    app: str | None = None,
    key: str = HOST,
    *,
    selector: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Obj:
    """A pod affinity term selecting ``app=<app>`` (or ``selector``) per ``key``."""
    found: Obj = {"topologyKey": key, **extra}
    if selector is not None:
        found["labelSelector"] = dict(selector)
    elif app is not None:
        found["labelSelector"] = {"matchLabels": {"app": app}}
    return found


def affinity(
    *,
    required: Sequence[Obj] = (),
    anti: Sequence[Obj] = (),
    preferred: Sequence[tuple[int, Obj]] = (),
    anti_preferred: Sequence[tuple[int, Obj]] = (),
) -> Obj:
    """A pod's ``spec.affinity`` with the given pod (anti-)affinity terms."""
    out: Obj = {}
    if required or preferred:
        out["podAffinity"] = {}
        if required:
            out["podAffinity"][REQUIRED] = list(required)
        if preferred:
            out["podAffinity"][PREFERRED] = [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred
            ]
    if anti or anti_preferred:
        out["podAntiAffinity"] = {}
        if anti:
            out["podAntiAffinity"][REQUIRED] = list(anti)
        if anti_preferred:
            out["podAntiAffinity"][PREFERRED] = [
                {"weight": w, "podAffinityTerm": t} for w, t in anti_preferred
            ]
    return out


def spread(
    app: str,
    key: str = ZONE,
    *,
    skew: int = 1,
    hard: bool = True,
    **extra: Any,
) -> Obj:
    """One topology spread constraint over ``app=<app>`` pods."""
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def with_spread(items: Item, *constraints: Obj) -> list[Obj]:
    """``items`` with every Pod given ``constraints``."""
    out = []
    for obj in flatten([items]):
        if obj["kind"] == "Pod":
            obj = {**obj, "spec": {**obj["spec"], "topologySpreadConstraints": list(constraints)}}
        out.append(obj)
    return out


def namespace(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def placed(
    name: str,
    where: str,
    labels: Mapping[str, str] | None = None,
    *,
    state: str = "Running",
    **pod_args: Any,
) -> list[Obj]:
    """A pod already on node ``where`` (Running unless ``state`` says Releasing, Bound,
    Binding, Succeeded or Failed) with ``labels``; other arguments go to ``pod``."""
    return worlds.pod(name, state=state, node=where, labels=dict(labels or {}), **pod_args)


def node_affinity(*expressions: Mapping[str, Any]) -> Obj:
    """A ``spec.affinity`` with one required nodeSelectorTerm of ``expressions``; merge it
    with :func:`affinity`'s output (``{**affinity(...), **node_affinity(...)}``)."""
    return {
        "nodeAffinity": {
            REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in expressions]}]}
        }
    }


# --- the independent checker ---------------------------------------------------------


def _requirement(labels: Mapping[str, str], expression: Mapping[str, Any]) -> bool:
    value = labels.get(expression["key"])
    values = list(expression.get("values") or [])
    operator = expression["operator"]
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):  # node affinity only: integers compared
        if value is None or not value.lstrip("-").isdigit():
            return False
        bound = int(values[0])
        return int(value) > bound if operator == "Gt" else int(value) < bound
    raise ValueError(f"operator {operator}")


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_requirement(labels, e) for e in selector.get("matchExpressions") or [])


@dataclass
class _Pod:
    key: str
    namespace: str
    labels: dict[str, str]
    spec: Obj
    node: str = ""
    placed_now: bool = False
    deleting: bool = False
    order: int = -1
    """Place in the cycle's placements (binds, then pipelined); -1 if placed before."""


def _term_selects(
    owner: _Pod, t: Mapping[str, Any], other: _Pod, ns_labels: Mapping[str, Mapping[str, str]]
) -> bool:
    selector = t.get("labelSelector")
    if selector is not None:
        extra = [
            {"key": k, "operator": "In", "values": [owner.labels[k]]}
            for k in t.get("matchLabelKeys") or []
            if k in owner.labels
        ] + [
            {"key": k, "operator": "NotIn", "values": [owner.labels[k]]}
            for k in t.get("mismatchLabelKeys") or []
            if k in owner.labels
        ]
        selector = {
            "matchLabels": selector.get("matchLabels") or {},
            "matchExpressions": [*(selector.get("matchExpressions") or []), *extra],
        }
    names = list(t.get("namespaces") or [])
    ns_selector = t.get("namespaceSelector")
    if not names and ns_selector is None:
        names = [owner.namespace]
    in_namespace = other.namespace in names or (
        ns_selector is not None
        and _selects(
            ns_selector,
            {**ns_labels.get(other.namespace, {}), "kubernetes.io/metadata.name": other.namespace},
        )
    )
    return in_namespace and _selects(selector, other.labels)


def _final_pods(objects: Iterable[Item], result: CycleResult) -> list[_Pod]:
    """Every pod that holds a node after the cycle, with where it is."""
    pods: dict[str, _Pod] = {}
    binding: dict[str, str] = {}
    for obj in flatten(objects):
        meta = obj.get("metadata", {})
        ns = meta.get("namespace", NAMESPACE)
        if obj.get("kind") == "Pod":
            phase = obj.get("status", {}).get("phase")
            pod = _Pod(f"{ns}/{meta['name']}", ns, dict(meta.get("labels") or {}), obj["spec"])
            pod.deleting = bool(meta.get("deletionTimestamp"))
            if phase not in ("Succeeded", "Failed"):
                pod.node = obj["spec"].get("nodeName") or ""
            pods[pod.key] = pod
        elif obj.get("kind") == "BindRequest":
            binding[f"{ns}/{obj['spec']['podName']}"] = obj["spec"]["selectedNode"]
    for key, where in binding.items():
        if key in pods and not pods[key].node:
            pods[key].node = where
    for eviction in result.evictions:
        pods[eviction.pod].node = ""
    for order, bind in enumerate([*result.binds, *result.pipelined]):
        pods[bind.pod].node = bind.node
        pods[bind.pod].placed_now = True
        pods[bind.pod].order = order
    return [p for p in pods.values() if p.node]


def violations(
    objects: Iterable[Item],
    result: CycleResult,
    *,
    affinity_too: bool = True,
    spread_too: bool = True,
) -> list[str]:
    """Every required rule a pod placed in the cycle breaks in the final placement.

    Checked for each pod the cycle bound or pipelined: its required anti-affinity,
    placed pods' required anti-affinity toward it, its required affinity (a pod matching
    all its terms in each term's domain, or none anywhere and the pod matching its own
    terms; with ``affinity_too``), and with ``spread_too`` its ``DoNotSchedule`` spread
    (the domains of its placed pods stay within ``maxSkew`` of the emptiest eligible
    domain). Required affinity and spread hold as placed; a later eviction of the pod
    they followed may undo them (IgnoredDuringExecution), so a check after actions
    that evict asks for anti-affinity only.
    """
    flat = flatten(objects)
    labels_of_node = {
        o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
        for o in flat
        if o.get("kind") == "Node"
    }
    taints_of_node = {
        o["metadata"]["name"]: list((o.get("spec") or {}).get("taints") or [])
        for o in flat
        if o.get("kind") == "Node"
    }
    ns_labels = {
        o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
        for o in flat
        if o.get("kind") == "Namespace"
    }
    pods = _final_pods(flat, result)

    def domain(pod: _Pod, key: str) -> str | None:
        return labels_of_node.get(pod.node, {}).get(key)

    found: list[str] = []
    for pod in (p for p in pods if p.placed_now):
        stanza = pod.spec.get("affinity") or {}
        others = [o for o in pods if o is not pod]
        for t in (stanza.get("podAntiAffinity") or {}).get(REQUIRED) or []:
            mine = domain(pod, t["topologyKey"])
            for other in others:
                if (
                    mine is not None
                    and domain(other, t["topologyKey"]) == mine
                    and _term_selects(pod, t, other, ns_labels)
                ):
                    found.append(f"{pod.key} on {pod.node} is anti-affine to {other.key}")
        for other in others:
            other_stanza = other.spec.get("affinity") or {}
            for t in (other_stanza.get("podAntiAffinity") or {}).get(REQUIRED) or []:
                theirs = domain(other, t["topologyKey"])
                if (
                    theirs is not None
                    and domain(pod, t["topologyKey"]) == theirs
                    and _term_selects(other, t, pod, ns_labels)
                ):
                    found.append(f"{other.key}'s anti-affinity excludes {pod.key} on {pod.node}")
        required = (stanza.get("podAffinity") or {}).get(REQUIRED) or []
        if required and affinity_too:
            keys = [t["topologyKey"] for t in required]

            def matches_all(other: _Pod, owner: _Pod = pod, terms: list[Obj] = required) -> bool:
                return all(_term_selects(owner, t, other, ns_labels) for t in terms)

            if any(domain(pod, k) is None for k in keys):
                found.append(f"{pod.key} on {pod.node} lacks an affinity topology key")
            elif not all(
                any(matches_all(other) and domain(other, k) == domain(pod, k) for other in others)
                for k in keys
            ):
                # kube-scheduler counts a pod matching all terms in each term's domain
                # its node has; the first-pod exception needs those counts empty when
                # the pod was placed: pods the cycle placed after it do not count
                anywhere = any(
                    matches_all(other) and any(domain(other, k) is not None for k in keys)
                    for other in others
                    if not other.placed_now or other.order < pod.order
                )
                if anywhere or not matches_all(pod):
                    found.append(f"{pod.key} on {pod.node} has no affine pod in its domain")
        if spread_too:
            found += _spread_violations(pod, pods, labels_of_node, taints_of_node)
    return found


def _tolerated(taint: Mapping[str, Any], tolerations: list[Mapping[str, Any]]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _node_affinity_passes(spec: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    """The pod's ``nodeSelector`` and required node affinity (terms ORed, a term's
    expressions and fields ANDed, an empty term matching nothing) admit the node."""
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED)
    if not required:
        return True
    for t in required.get("nodeSelectorTerms") or []:
        expressions = t.get("matchExpressions") or []
        fields = t.get("matchFields") or []
        if not expressions and not fields:
            continue
        if all(_requirement(labels, e) for e in expressions) and all(
            _requirement({"metadata.name": name}, f) for f in fields
        ):
            return True
    return False


def _spread_violations(
    pod: _Pod,
    pods: list[_Pod],
    labels_of_node: Mapping[str, Mapping[str, str]],
    taints_of_node: Mapping[str, list[Mapping[str, Any]]],
) -> list[str]:
    """``pod``'s DoNotSchedule constraints on the final placement: its node carries the
    key, and its domain holds at most ``maxSkew`` more matching pods than the emptiest
    eligible domain (min 0 with fewer than ``minDomains`` eligible domains). Eligible:
    nodes carrying every DoNotSchedule constraint's key (as kube-scheduler counts) that
    pass the pod's node selector and required node affinity (``nodeAffinityPolicy``
    Honor, the default) and whose NoSchedule/NoExecute taints it tolerates
    (``nodeTaintsPolicy`` Honor; default Ignore). Counted: pods on eligible
    nodes, in the pod's namespace, not being deleted, matching the selector with
    ``matchLabelKeys`` folded in from the pod's labels."""
    found = []
    constraints = pod.spec.get("topologySpreadConstraints") or []
    hard_keys = {c["topologyKey"] for c in constraints if c["whenUnsatisfiable"] == "DoNotSchedule"}
    for c in constraints:
        if c["whenUnsatisfiable"] != "DoNotSchedule":
            continue
        key = c["topologyKey"]
        mine = labels_of_node.get(pod.node, {}).get(key)
        if mine is None:
            found.append(f"{pod.key} on {pod.node} lacks spread key {key}")
            continue
        honor_affinity = c.get("nodeAffinityPolicy", "Honor") == "Honor"
        honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
        tolerations = list(pod.spec.get("tolerations") or [])
        eligible = {
            name: labels[key]
            for name, labels in labels_of_node.items()
            if all(k in labels for k in hard_keys)
            and (not honor_affinity or _node_affinity_passes(pod.spec, name, labels))
            and (not honor_taints or all(_tolerated(t, tolerations) for t in taints_of_node[name]))
        }
        selector = c.get("labelSelector")
        if selector is not None:
            selector = {
                "matchLabels": selector.get("matchLabels") or {},
                "matchExpressions": [
                    *(selector.get("matchExpressions") or []),
                    *(
                        {"key": k, "operator": "In", "values": [pod.labels[k]]}
                        for k in c.get("matchLabelKeys") or []
                        if k in pod.labels
                    ),
                ],
            }
        counts = dict.fromkeys(eligible.values(), 0)
        for other in pods:
            if (
                other.node in eligible
                and other.namespace == pod.namespace
                and not other.deleting
                and _selects(selector, other.labels)
            ):
                counts[eligible[other.node]] += 1
        low = min(counts.values(), default=0) if len(counts) >= c.get("minDomains", 1) else 0
        if counts.get(mine, 0) - low > c["maxSkew"]:
            found.append(f"{pod.key} on {pod.node}: {key} counts {counts} exceed maxSkew")
    return found
