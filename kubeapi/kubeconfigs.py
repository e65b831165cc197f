"""``$KUBECONFIG`` with several files: kubectl's merge of a path list into one config.

Why this module exists: a user with ``KUBECONFIG=~/.kube/config:~/.kube/eks`` expects
every component to see the contexts of both files, as kubectl does.  The rules are
client-go's: files that do not exist are skipped; the first file to set
``current-context`` wins; for contexts, clusters and users the first entry with a name
wins.  Relative paths (CA, client certificate and key, token file, an exec command
containing ``/``) are made absolute against the file that holds them before merging.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

SECTIONS = ("contexts", "clusters", "users")
PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


class KubeconfigError(Exception):
    """A kubeconfig of the list cannot be read; names the file."""


def read(path: Path) -> dict[str, Any]:
    """One kubeconfig file as a mapping."""
    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"kubeconfig {path}: cannot read: {exc}") from exc
    if not isinstance(loaded, dict):
        raise KubeconfigError(f"kubeconfig {path}: not a mapping")
    return loaded


def merge(paths: Sequence[str]) -> dict[str, Any]:
    """The merged config of ``paths`` (an empty one when none exists)."""
    merged: dict[str, Any] = {section: [] for section in SECTIONS}
    seen: dict[str, set[str]] = {section: set() for section in SECTIONS}
    for raw in paths:
        path = Path(raw).expanduser()
        if not raw or not path.exists():
            continue
        config = read(path)
        if not merged.get("current-context") and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for section in SECTIONS:
            for item in config.get(section) or []:
                if not isinstance(item, Mapping) or item.get("name") in seen[section]:
                    continue
                seen[section].add(str(item.get("name")))
                merged[section].append(_absolute(section, item, path.parent))
    return merged


def _absolute(section: str, item: Mapping[str, Any], base: Path) -> dict[str, Any]:
    key = section[:-1]
    body = item.get(key)
    if not isinstance(body, Mapping):
        return dict(item)
    fixed = dict(body)
    for field in PATH_FIELDS.get(section, ()):
        value = fixed.get(field)
        if isinstance(value, str) and value and not os.path.isabs(value):
            fixed[field] = str(base / value)
    plugin = fixed.get("exec")
    if section == "users" and isinstance(plugin, Mapping):
        command = plugin.get("command")
        if isinstance(command, str) and "/" in command and not os.path.isabs(command):
            fixed["exec"] = {**plugin, "command": str(base / command)}
    return {**item, key: fixed}
