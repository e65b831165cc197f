"""Writing command results as YAML (default) or JSON, sorted and stable.

Why: users diff and script against the CLI's output (docs/cli.md); one
writer keeps key order, list order and number formatting identical across
commands.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import yaml


@functools.cache
def _dumper() -> type[yaml.SafeDumper]:
    """The YAML dumper (multi-line strings as blocks), built on first use: JSON output
    does not import PyYAML."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str_presenter)
    return _Dumper


def write(data: Any, fmt: str, stream: TextIO | None = None) -> None:
    """Write ``data`` as ``yaml`` or ``json``."""
    out = stream or sys.stdout
    if fmt == "json":
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        import yaml

        dumper = _dumper()
        yaml.dump(data, out, Dumper=dumper, sort_keys=False, default_flow_style=False, width=1000)


def write_all(documents: list[Any], stream: TextIO | None = None) -> None:
    """Several YAML documents separated by ``---``."""
    import yaml

    out = stream or sys.stdout
    yaml.dump_all(
        documents, out, Dumper=_dumper(), sort_keys=False, default_flow_style=False, width=1000
    )
