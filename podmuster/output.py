"""Writing command results as YAML (default) or JSON, sorted and stable.

Why: users diff and script against the CLI's output (docs/cli.md); one
writer keeps key order, list order and number formatting identical across
commands.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def write(data: Any, fmt: str, stream: TextIO | None = None) -> None:
    """Write ``data`` as ``yaml`` or ``json``."""
    out = stream or sys.stdout
    if fmt == "json":
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        yaml.dump(data, out, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def write_all(documents: list[Any], stream: TextIO | None = None) -> None:
    """Several YAML documents separated by ``---``."""
    out = stream or sys.stdout
    yaml.dump_all(
        documents, out, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000
    )
