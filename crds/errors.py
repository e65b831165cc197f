"""User-facing input errors: one line naming the file, the object and the field.

The command-line contract promises that bad input ends with exit code 2 and a
single line such as::

    snapshot.yaml: Pod team-a/train-0: spec.containers[0].resources.requests.cpu: \\
        invalid quantity "1.2.3"

(shown wrapped here; the real message has no line break).

Every layer that reads objects (document loading here, the typed models, the
scheduler's snapshot builder, the podgrouper) raises :class:`InputError` so the
CLI can print ``str(error)`` and nothing else. Exception tree of this package::

    ValueError
    ├── InputError        (this module) bad objects on input, one line
    └── QuantityError     (crds.quantities) a malformed quantity string

Callers that detect a problem deep inside an object use :func:`object_error`;
callers holding a :class:`pydantic.ValidationError` use
:func:`from_validation_error`, which keeps only the first problem (the CLI
prints one line).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from crds import names

if TYPE_CHECKING:  # pydantic loads only where models are used (CLI start-up stays fast)
    import pydantic

__all__ = [
    "InputError",
    "describe_object",
    "first_problem",
    "format_field_path",
    "from_validation_error",
    "object_error",
    "shown",
]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_field_path(path: Iterable[str | int]) -> str:
    """Render a field path the way ``kubectl explain`` users expect.

    >>> format_field_path(["spec", "containers", 0, "resources", "requests", "cpu"])
    'spec.containers[0].resources.requests.cpu'
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("["):  # a map key, already bracketed: metadata.labels[a.b/c]
            out += part
        else:
            out += f".{part}" if out else part
    return out


_PLURALS = {"PodGroup": "podgroups", "Queue": "queues", "BindRequest": "bindrequests",
            "Topology": "topologies"}  # fmt: skip
"""The resource names of KAI's kinds (:data:`crds.names.KINDS`), for their look-alikes."""


def describe_object(obj: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` for namespaced objects, ``Kind name`` otherwise.

    A kind KAI also has, of another API group, is named by its resource and group
    (``podgroups.scheduling.k8s.io``, as kubectl accepts it), never taken for KAI's.

    Tolerates malformed objects (missing kind or name) since it is used while
    reporting exactly such problems.
    """
    kind = obj.get("kind")
    metadata = obj.get("metadata")
    name = namespace = None
    if isinstance(metadata, Mapping):
        name, namespace = metadata.get("name"), metadata.get("namespace")
    label = kind if isinstance(kind, str) and kind else "object"
    group = names.group_kind(obj)[0]
    if label in _PLURALS and names.KINDS[label][0] != group and group:
        # a look-alike of a KAI kind (Kubernetes' own PodGroup): its resource, with the group
        label = f"{_PLURALS[label]}.{group}"
    if not isinstance(name, str) or not name:
        return label
    if isinstance(namespace, str) and namespace:
        return f"{label} {namespace}/{name}"
    return f"{label} {name}"


class InputError(ValueError):
    """Bad input; ``str()`` is exactly one line: ``source: object: field: message``.

    Parts that do not apply are left out, e.g. ``snapshot.yaml: line 4: ...``
    for a YAML syntax error (the position goes in ``field``).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = _one_line(message)
        self.source = source
        self.obj = obj
        self.field = field
        parts = [p for p in (source, obj, field) if p]
        super().__init__(": ".join([*parts, self.message]))


def object_error(
    source: str | None,
    obj: Mapping[str, Any],
    field: str | Iterable[str | int] | None,
    message: str,
) -> InputError:
    """Build the :class:`InputError` for a problem at ``field`` of ``obj`` read from ``source``.

    ``field`` may be a dotted string or a path sequence (``["spec", "containers", 0]``).
    """
    if field is not None and not isinstance(field, str):
        field = format_field_path(field)
    return InputError(message, source=source, obj=describe_object(obj), field=field or None)


def from_validation_error(
    source: str | None, obj: Mapping[str, Any], error: pydantic.ValidationError
) -> InputError:
    """Turn the first problem of a pydantic ``ValidationError`` into an :class:`InputError`.

    The field path uses the manifest's (camelCase) names; the message is the
    original exception's text for value errors (e.g. a quantity) and pydantic's
    wording otherwise.
    """
    path, message = first_problem(error)
    return object_error(source, obj, path, message)


def first_problem(error: pydantic.ValidationError) -> tuple[str, str]:
    """``(field path, message naming the value)`` of the first problem of ``error``.

    For example ``("spec.minMemeber", "unknown field, got 3")``.
    """
    problems = error.errors(include_url=False)
    first = problems[0]
    path = _field_path(first["loc"])
    # a value that fits no member of a union (int | float) fails once per member
    here = [p for p in problems if _field_path(p["loc"]) == path]
    if any(p["type"] in _NUMBER for p in here):  # "a number" says what "an integer" would
        here = [p for p in here if p["type"] not in _INTEGER] or here
    message = "; ".join(dict.fromkeys(_message(p) for p in here))
    if first["type"] != "missing" and not _names_value(first, message):
        message = f"{message}, got {shown(first.get('input'))}"
    return path, message


_NUMBER: Final = frozenset({"float_type", "float_parsing"})
_INTEGER: Final = frozenset({"int_type", "int_parsing", "int_from_float"})
_MAP_TYPES: Final = frozenset(
    {"model_type", "model_attributes_type", "dataclass_type", "dict_type"}
)
"""Pydantic's "valid dictionary or instance of <Class>": a map, in YAML's and JSON's words."""


_UNION_MEMBER = re.compile(r"^(int|float|str|bool|(function-\w+|list|dict|literal)\[.*\])$")


def _field_path(loc: tuple[str | int, ...]) -> str:
    """The manifest path of a pydantic location, without union member tags (``int``)."""
    return format_field_path(
        [p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.match(p))]
    )


def _message(problem: Any) -> str:
    cause = (problem.get("ctx") or {}).get("error")
    if problem["type"] == "extra_forbidden":
        return "unknown field"
    if problem["type"] in _MAP_TYPES:
        return "expected a map"
    return str(cause) if isinstance(cause, Exception) else str(problem["msg"])


def _names_value(problem: Any, message: str) -> bool:
    """Whether ``message``, our own validator's (``invalid duration 'soon'``), already shows
    the value; pydantic's own wording never does (its numbers are bounds, not the value)."""
    if not isinstance((problem.get("ctx") or {}).get("error"), Exception):
        return False
    text = re.escape(shown(problem.get("input")))
    return re.search(rf"(?<![\w.]){text}(?![\w.])", message) is not None


def shown(value: Any) -> str:
    """A value as an error line shows it: YAML's words for booleans and null, strings
    quoted, short, on one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
