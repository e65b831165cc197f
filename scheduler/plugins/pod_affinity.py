"""Inter-pod affinity, anti-affinity and topology spread as one dynamic constraint.

Why: where a pod may go depends on the pods around it, including the ones
this cycle has just placed (a gang's members spread against each other), so
these rules are a dynamic constraint, asked on every placement
(docs/semantics.md §14). They follow kube-scheduler's InterPodAffinity and
PodTopologySpread plugins:

- required podAffinity: every term's topology domain on the node holds a pod
  matching all the required terms (the first pod of a self-affine group may go
  to any node carrying the keys);
- required podAntiAffinity: no matching pod in the node's domain; and, the other
  way round, no placed pod whose required anti-affinity matches this pod;
- ``DoNotSchedule`` spread: the node's domain would not exceed ``maxSkew`` over
  the emptiest eligible domain (``minDomains``, node affinity and taint policies);
- preferred terms (the pod's own, and placed pods' preferred and required terms
  toward it) and ``ScheduleAnyway`` spread: a score, each normalised over the
  feasible nodes to [0, 1] as kube-scheduler normalises it, weighed in KAI's
  k8s-plugins tier (100,000) above bin-packing.

Counting is incremental (:mod:`scheduler.plugins.pod_tallies`); each mask is a
few vectorised expressions over all nodes. When no pod of the snapshot has such
a rule the plugin registers nothing.
"""

from __future__ import annotations

import math

import numpy as np

from scheduler.api.affinity import (
    HARD_POD_AFFINITY_WEIGHT,
    NamespaceLabels,
    PodTerm,
    SpreadConstraint,
)
from scheduler.api.labels import Selector
from scheduler.api.namespaces import namespace_lookup
from scheduler.api.pods import PodInfo
from scheduler.framework import extension_points as ep
from scheduler.framework.domains import Domains, domains
from scheduler.framework.session import Session
from scheduler.plugins.pod_tallies import Anchor, PodTallies, Tally
from scheduler.plugins.predicates import (
    node_affinity_mask,
    node_selector_mask,
    toleration_mask,
)

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = f"{SPREAD_MISMATCH} (missing required label)"
PREFERENCE_TIER = 100_000.0  # KAI's k8s-plugins score tier


def _selector_anchors(selector: Selector | None) -> set[Anchor]:
    return set(selector.anchors()) if selector is not None else set()


class _Owners:
    """Terms of placed pods that reach other pods: ``(kind, weight, term)`` -> owners per node."""

    def __init__(self, tallies: PodTallies, node_count: int) -> None:
        self._tallies = tallies
        self._node_count = node_count
        self.by_key: dict[tuple[str, int, PodTerm], Tally] = {}
        self._anchored: dict[tuple[str, str | None], list[tuple[str, int, PodTerm]]] = {}
        self._unanchored: list[tuple[str, int, PodTerm]] = []

    def register(self, owner: PodInfo) -> None:
        affinity = owner.pod_affinity
        if affinity is None:
            return
        for key in _owner_keys(owner):
            if key in self.by_key:
                continue
            tally = Tally(lambda _p: False, (), False, np.zeros(self._node_count, dtype=np.int64))
            self.by_key[key] = tally
            anchors = key[2].selector.anchors() if key[2].selector is not None else ()
            if anchors and all(k in self._tallies.keys for k, _ in anchors):
                for anchor in anchors:
                    self._anchored.setdefault(anchor, []).append(key)
            elif key[2].selector is not None:
                self._unanchored.append(key)

    def moved(self, owner: PodInfo, step: int) -> None:
        if owner.pod_affinity is None or owner.node < 0:
            return
        for key in _owner_keys(owner):
            self.by_key[key].add(owner.node, step)

    def reaching(self, pod: PodInfo, ns_labels: NamespaceLabels) -> list[tuple[str, int, PodTerm]]:
        """The owner terms that select ``pod`` (whatever their owners' counts now)."""
        keys = list(self._unanchored)
        labels = pod.labels
        for key in self._tallies.keys:
            value = labels.get(key)
            if value is not None:
                keys.extend(self._anchored.get((key, value), ()))
                keys.extend(self._anchored.get((key, None), ()))
        return [
            key for key in dict.fromkeys(keys) if key[2].matches(pod.namespace, labels, ns_labels)
        ]


def _owner_keys(owner: PodInfo) -> list[tuple[str, int, PodTerm]]:
    affinity = owner.pod_affinity
    if affinity is None:
        return []
    keys = [("anti", 0, term) for term in affinity.anti_affinity]
    keys += [("prefer", HARD_POD_AFFINITY_WEIGHT, term) for term in affinity.affinity]
    keys += [("prefer", weighted.weight, weighted.term) for weighted in affinity.preferred]
    return keys


def _normalised(raw: ep.Scores, feasible: ep.Mask, *, lower_is_better: bool = False) -> ep.Scores:
    """kube-scheduler's normalisation: the feasible range mapped onto [0, 1]."""
    out = np.zeros(len(raw), dtype=np.float64)
    if not feasible.any():
        return out
    values = raw[feasible]
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return out
    if lower_is_better:
        out[feasible] = (high - values) / (high - low)
    else:
        out[feasible] = (values - low) / (high - low)
    return out


class PodAffinityPlugin:
    """Registers inter-pod affinity and topology spread as a dynamic constraint."""

    name = "podaffinity"

    def on_session_open(self, session: Session) -> None:
        snapshot = session.snapshot
        pods = snapshot.pods
        ruled = [pod for pod in pods if pod.pod_affinity is not None or pod.spread]
        if not ruled:
            return  # nothing to constrain: placements pay nothing for this plugin
        nodes = snapshot.nodes
        meta = nodes.meta
        count = len(nodes)
        ns_labels = namespace_lookup(snapshot.namespace_labels)

        anchors: set[Anchor] = set()
        for pod in ruled:
            if pod.pod_affinity is not None:
                for kind_key in _owner_keys(pod):
                    anchors |= _selector_anchors(kind_key[2].selector)
            for constraint in pod.spread:
                anchors |= _selector_anchors(constraint.selector)
        tallies = PodTallies(pods, count, anchors)
        owners = _Owners(tallies, count)
        for pod in ruled:
            owners.register(pod)
        for pod in ruled:
            if tallies.counted(pod):
                owners.moved(pod, 1)
        reaching_memo: dict[str, list[tuple[str, int, PodTerm]]] = {}
        policy_memo: dict[object, ep.Mask] = {}

        def term_tally(term: PodTerm) -> Tally:
            return tallies.tally(
                ("term", term),
                lambda p: term.matches(p.namespace, p.labels, ns_labels),
                term.selector,
            )

        def all_terms_tally(terms: tuple[PodTerm, ...]) -> Tally:
            first = terms[0].selector
            return tallies.tally(
                ("all", terms),
                lambda p: all(t.matches(p.namespace, p.labels, ns_labels) for t in terms),
                first,
            )

        def spread_tally(constraint: SpreadConstraint, namespace: str) -> Tally:
            selector = constraint.selector
            return tallies.tally(
                ("spread", selector, namespace),
                lambda p: (
                    p.namespace == namespace and selector is not None and selector.matches(p.labels)
                ),
                selector,
                skip_releasing=True,
            )

        def required_affinity(pod: PodInfo, terms: tuple[PodTerm, ...]) -> ep.Mask:
            tally = all_terms_tally(terms)
            ok = np.ones(count, dtype=bool)
            keyed = np.zeros(count, dtype=bool)
            for term in terms:
                has_key = domains(nodes, term.topology_key).has_key
                ok &= has_key
                keyed |= has_key
            if not tally.per_node[keyed].any():
                # No matching pod in any domain: the first pod of a group that is affine
                # to itself may start on any node carrying the keys (kube-scheduler's rule).
                if all(t.matches(pod.namespace, pod.labels, ns_labels) for t in terms):
                    return ok
                return np.zeros(count, dtype=bool)
            for term in terms:
                ok &= domains(nodes, term.topology_key).per_node(tally.per_node) > 0
            return ok

        def anti_affinity(terms: tuple[PodTerm, ...]) -> ep.Mask:
            ok = np.ones(count, dtype=bool)
            for term in terms:
                tally = term_tally(term)
                if tally.total:
                    ok &= domains(nodes, term.topology_key).per_node(tally.per_node) == 0
            return ok

        def policy_mask(pod: PodInfo, constraint: SpreadConstraint) -> ep.Mask:
            """Nodes whose pods count for the pod's spread (node inclusion policies)."""
            memo_key = (pod.constraint_key, constraint.honor_node_affinity, constraint.honor_taints)
            found = policy_memo.get(memo_key)
            if found is not None:
                return found
            mask = np.ones(count, dtype=bool)
            if constraint.honor_node_affinity:
                if pod.node_selector:
                    mask &= node_selector_mask(meta, pod.node_selector)
                if pod.node_affinity:
                    mask &= node_affinity_mask(meta, pod.node_affinity)
            if constraint.honor_taints:
                mask &= toleration_mask(meta, pod.tolerations)
            policy_memo[memo_key] = mask
            return mask

        def spread_counts(
            pod: PodInfo, constraint: SpreadConstraint, keyed: ep.Mask
        ) -> tuple[Domains, ep.Scores, ep.Mask]:
            """Per domain: matching pods; and which domains are eligible. ``keyed``: the
            nodes carrying the key of every constraint of the same kind (hard or soft),
            the only ones kube-scheduler counts."""
            found = domains(nodes, constraint.topology_key)
            eligible = keyed & policy_mask(pod, constraint)
            tally = spread_tally(constraint, pod.namespace)
            counted = np.where(eligible, tally.per_node, 0)
            summed: ep.Scores = np.bincount(
                found.of_node, weights=counted, minlength=found.size + 1
            ).astype(np.float64)
            present: ep.Mask = np.zeros(found.size + 1, dtype=bool)
            present[found.of_node[eligible]] = True
            present[found.size] = False
            return found, summed, present

        def spread(pod: PodInfo) -> tuple[list[tuple[ep.Mask, str]], ep.Scores | None]:
            parts: list[tuple[ep.Mask, str]] = []
            raw: ep.Scores | None = None
            keyed = {True: np.ones(count, dtype=bool), False: np.ones(count, dtype=bool)}
            for constraint in pod.spread:
                keyed[constraint.hard] &= domains(nodes, constraint.topology_key).has_key
            for constraint in pod.spread:
                found, summed, present = spread_counts(pod, constraint, keyed[constraint.hard])
                per_node = summed[found.of_node]
                if constraint.hard:
                    domains_present = int(present.sum())
                    low = float(summed[present].min()) if domains_present else 0.0
                    if domains_present < constraint.min_domains:
                        low = 0.0
                    own = (
                        1
                        if constraint.selector is not None
                        and constraint.selector.matches(pod.labels)
                        else 0
                    )
                    parts.append((found.has_key, SPREAD_MISSING_LABEL))
                    ok = ~found.has_key | (per_node + own - low <= constraint.max_skew)
                    parts.append((ok, SPREAD_MISMATCH))
                else:
                    weight = math.log(int(present.sum()) + 2)
                    part: ep.Scores = np.where(found.has_key, per_node * weight, 0.0)
                    raw = part if raw is None else raw + part
            return parts, raw

        def preference(pod: PodInfo, reaching: list[tuple[str, int, PodTerm]]) -> ep.Scores | None:
            raw: ep.Scores | None = None

            def add(weight: int, tally: Tally, key: str) -> None:
                nonlocal raw
                if not tally.total:
                    return
                part: ep.Scores = domains(nodes, key).per_node(tally.per_node).astype(np.float64)
                part *= weight
                raw = part if raw is None else raw + part

            affinity = pod.pod_affinity
            if affinity is not None:
                for weighted in affinity.preferred:
                    add(weighted.weight, term_tally(weighted.term), weighted.term.topology_key)
            for kind, weight, term in reaching:
                if kind == "prefer":
                    add(weight, owners.by_key[(kind, weight, term)], term.topology_key)
            return raw

        def constrain(pod: PodInfo) -> ep.DynamicConstraint | None:
            reaching = reaching_memo.get(pod.uid)
            if reaching is None:
                reaching = reaching_memo[pod.uid] = owners.reaching(pod, ns_labels)
            affinity = pod.pod_affinity
            if affinity is None and not pod.spread and not reaching:
                return None
            parts: list[tuple[ep.Mask, str]] = []
            spread_raw: ep.Scores | None = None
            if pod.spread:
                parts, spread_raw = spread(pod)
            if affinity is not None and affinity.affinity:
                parts.append((required_affinity(pod, affinity.affinity), AFFINITY_MISMATCH))
            if affinity is not None and affinity.anti_affinity:
                parts.append((anti_affinity(affinity.anti_affinity), ANTI_AFFINITY_MISMATCH))
            existing = np.ones(count, dtype=bool)
            for kind, weight, term in reaching:
                owner = owners.by_key[(kind, weight, term)]
                if kind == "anti" and owner.total:
                    existing &= domains(nodes, term.topology_key).per_node(owner.per_node) == 0
            if not existing.all():
                parts.append((existing, EXISTING_ANTI_AFFINITY))
            affinity_raw = preference(pod, reaching)
            if affinity_raw is None and spread_raw is None:
                return ep.DynamicConstraint(parts=parts)
            feasible = session.static_mask(pod)[0].copy()
            for part, _reason in parts:
                feasible &= part
            score = np.zeros(count, dtype=np.float64)
            if affinity_raw is not None:
                score += _normalised(affinity_raw, feasible)
            if spread_raw is not None:
                scored = feasible & np.any(
                    [domains(nodes, c.topology_key).has_key for c in pod.spread if not c.hard],
                    axis=0,
                )
                score += _normalised(spread_raw, scored, lower_is_better=True)
            return ep.DynamicConstraint(parts=parts, score=score * PREFERENCE_TIER)

        def on_allocate(pod: PodInfo) -> None:
            tallies.moved(pod, 1)
            owners.moved(pod, 1)

        def on_deallocate(pod: PodInfo) -> None:
            tallies.moved(pod, -1)
            owners.moved(pod, -1)

        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)
