"""Namespaces' labels, as namespace selectors see them.

Why: a pod affinity term's ``namespaceSelector`` selects namespaces by their
labels; the API server gives every namespace ``kubernetes.io/metadata.name``,
so a namespace the snapshot has no object for still answers to its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crds.names import NAMESPACE_NAME_LABEL


def namespace_lookup(known: Mapping[str, Mapping[str, str]]) -> Callable[[str], Mapping[str, str]]:
    """:func:`namespace_labels` of ``known`` as a function, each namespace worked out once
    (a namespace selector is asked about the same few namespaces for many pods)."""
    memo: dict[str, Mapping[str, str]] = {}

    def lookup(name: str) -> Mapping[str, str]:
        found = memo.get(name)
        if found is None:
            found = memo[name] = namespace_labels(known, name)
        return found

    return lookup


def namespace_labels(known: Mapping[str, Mapping[str, str]], name: str) -> Mapping[str, str]:
    """The labels of namespace ``name`` (its name label at least)."""
    labels = known.get(name)
    if labels is None:
        return {NAMESPACE_NAME_LABEL: name}
    if labels.get(NAMESPACE_NAME_LABEL) == name:
        return labels
    return {**labels, NAMESPACE_NAME_LABEL: name}
