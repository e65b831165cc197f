"""Reading cluster objects from files and stdin (docs/cli.md §1).

Every podmuster command reads "objects on input" the same way: any mix of
``kind: List`` documents (what ``kubectl get -o yaml`` prints), multi-document
YAML, JSON, several files and ``-`` for standard input. This module turns all
of that into one flat, ordered list of :class:`SourcedObject` and applies the
two defaults that keep hand-written snapshots short:

* a missing ``metadata.uid`` is derived from kind, namespace and name
  (:func:`default_uid`, a UUIDv5, so it is stable across runs);
* a missing ``metadata.creationTimestamp`` is :data:`EPOCH` plus one minute per
  position in the input, so earlier objects are older and output is
  deterministic.

It deliberately knows nothing about kinds: callers decide which kinds they
read and warn about the rest. Speed matters (snapshots of 20k pods): JSON goes
through :mod:`json`, YAML through libyaml's ``CSafeLoader`` when available,
both with the cyclic garbage collector paused (see :func:`gc_paused`).
YAML timestamps are kept as strings, as Kubernetes does.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO, TypeVar

from crds import builtin, errors
from crds import metadata as object_metadata

if TYPE_CHECKING:
    import pydantic
    import yaml

__all__ = [
    "EPOCH",
    "STDIN",
    "UID_NAMESPACE",
    "SourcedObject",
    "default_creation_timestamp",
    "default_uid",
    "load_documents",
    "parse_text",
]

STDIN: Final = "-"
"""The file name that means standard input."""

EPOCH: Final = datetime(2024, 1, 1, tzinfo=UTC)
"""Creation time given to the first object without ``creationTimestamp``."""

UID_NAMESPACE: Final = uuid.UUID("6c1f7d52-3a8e-5b0e-9d47-0f2a8c3e6b15")
"""UUIDv5 namespace for derived uids (a fixed random value owned by podmuster)."""

_STDIN_LABEL: Final = "<stdin>"
_UID_PREFIX: Final = UID_NAMESPACE.bytes
_EPOCH_SECONDS: Final = int(EPOCH.timestamp())

ModelT = TypeVar("ModelT", bound="pydantic.BaseModel")


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """Safe loader that leaves timestamps as strings (as Kubernetes' YAML→JSON does).

    Built on first use: PyYAML is not imported by a command that reads only JSON.
    """
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[valid-type,misc]
        pass

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return _Loader


@dataclass(frozen=True, slots=True)
class SourcedObject:
    """One object from the input, with where it came from.

    ``obj`` is the parsed mapping (defaults applied), ``source`` the file name
    as given (``<stdin>`` for ``-``), ``index`` the object's 0-based position in
    the whole input (items of a List count one each).
    """

    obj: dict[str, Any]
    source: str
    index: int

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.obj["metadata"].get("namespace")
        return namespace if isinstance(namespace, str) and namespace else None

    def describe(self) -> str:
        """``Kind namespace/name`` (or ``Kind name``), as used in error lines."""
        return errors.describe_object(self.obj)

    def error(self, field: str | Iterable[str | int] | None, message: str) -> errors.InputError:
        """An :class:`~crds.errors.InputError` about ``field`` of this object."""
        return errors.object_error(self.source, self.obj, field, message)

    def to_model(self, model: type[ModelT]) -> ModelT:
        """Validate into a typed model; a validation problem becomes an ``InputError``."""
        from pydantic import ValidationError

        try:
            return model.model_validate(self.obj)
        except ValidationError as exc:
            raise errors.from_validation_error(self.source, self.obj, exc) from exc


def default_uid(kind: str, namespace: str | None, name: str) -> str:
    """The uid given to an object that has none: stable for the same kind/namespace/name.

    Equal to ``str(uuid.uuid5(UID_NAMESPACE, f"{kind}/{namespace}/{name}"))``,
    computed without building a ``UUID`` object (it runs once per object).
    """
    digest = bytearray(
        hashlib.sha1(_UID_PREFIX + f"{kind}/{namespace or ''}/{name}".encode()).digest()
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest[:16].hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def default_creation_timestamp(index: int) -> str:
    """RFC 3339 creation time for the object at ``index``: :data:`EPOCH` + ``index`` minutes."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_EPOCH_SECONDS + 60 * index))


def _parse_json(text: str, label: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise errors.InputError(
            f"invalid JSON: {exc.msg}", source=label, field=f"line {exc.lineno} column {exc.colno}"
        ) from exc


def _parse_yaml(text: str, label: str) -> list[Any]:
    import yaml

    try:
        return list(yaml.load_all(text, Loader=_loader()))
    except yaml.YAMLError as exc:
        raise yaml_error(exc, label) from exc


def yaml_error(exc: yaml.YAMLError, source: str | None = None) -> errors.InputError:
    """PyYAML's several-line message as one line: the problem and, when known, where."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else None
        problem = exc.problem or exc.context or "syntax error"
        return errors.InputError(f"invalid YAML: {problem}", source=source, field=where)
    return errors.InputError(f"invalid YAML: {exc}", source=source)


def parse_text(text: str, label: str) -> list[Any]:
    """Parse a file's text into its documents (JSON when it looks like JSON, else YAML).

    JSON is tried first for ``.json`` files and for text starting with ``{`` or
    ``[``; a ``.json`` file that is not valid JSON is an error, other text falls
    back to YAML (a superset for our purposes).
    """
    stripped = text.lstrip()
    if label.endswith(".json"):
        return _parse_json(text, label)
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass
    return _parse_yaml(text, label)


def _is_list(doc: Mapping[str, Any]) -> bool:
    kind = doc.get("kind")
    if not isinstance(kind, str) or not isinstance(doc.get("items"), list):
        return False
    return kind == "List" or (kind.endswith("List") and "name" not in (doc.get("metadata") or {}))


def _place(where: str, position: int) -> str:
    return f"{where}[{position}]" if where else f"document {position + 1}"


def _iter_objects(
    docs: Iterable[Any], label: str, where: str, problems: list[errors.InputError] | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Flatten Lists and yield each object mapping with its place; skip empty documents.

    ``where`` is the position prefix used in errors: ``""`` for the documents of
    a file (reported as ``document 2``), ``"document 2: items"`` inside a List.
    A document that is not a mapping is raised, or with ``problems`` added there.
    """
    for position, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            got = type(doc).__name__
            error = errors.InputError(
                f"expected an object (mapping), got {got}",
                source=label,
                field=_place(where, position),
            )
            if problems is None:
                raise error
            problems.append(error)
            continue
        if doc.get("kind") == "List" and not isinstance(doc.get("items"), list):
            if doc.get("items") is None:
                continue  # an empty List: a nil list prints as null, or not at all
            error = errors.InputError(
                f"expected a list, got {type(doc['items']).__name__}",
                source=label,
                field=f"{_place(where, position)}: items",
            )
            if problems is None:
                raise error
            problems.append(error)
            continue
        if "items" in doc and _is_list(doc):
            place = _place(where, position)
            item_kind = doc["kind"][: -len("List")] if doc["kind"] != "List" else None
            for item in doc["items"] if item_kind else ():
                if isinstance(item, dict):
                    item.setdefault("kind", item_kind)
                    item.setdefault("apiVersion", doc.get("apiVersion"))
            yield from _iter_objects(doc["items"], label, f"{place}: items", problems)
        else:
            yield _place(where, position), doc


def generated_name(prefix: str, index: int) -> str:
    """``prefix`` plus a 5-character suffix derived from the position in the input."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    value = int(hashlib.sha256(f"{prefix}/{index}".encode()).hexdigest()[:12], 16)
    suffix = ""
    for _ in range(5):
        value, digit = divmod(value, len(alphabet))
        suffix += alphabet[digit]
    return prefix + suffix


def check_fields(obj: Mapping[str, Any]) -> None:
    """Raise :class:`~crds.errors.InputError` (its ``field`` set) for what the API server
    refuses in any object read from a file: labels and annotations that are no map of
    strings (every kind), and for Kubernetes' own kinds an unknown field or a value of the
    wrong type (:mod:`crds.builtin`). The one check for every reader of manifests."""
    object_metadata.check_metadata_maps(obj)
    problem = builtin.check(obj)
    if problem is not None:
        raise errors.InputError(problem[1], field=errors.format_field_path(problem[0]))


def _check_and_default(obj: dict[str, Any], label: str, index: int, place: str) -> None:
    """Check what every object needs (kind, apiVersion, a name, labels and annotations that
    are maps of strings); default uid and time.

    An object that cannot be named is described by its ``place`` in the file too."""

    def error(field: str, message: str) -> errors.InputError:
        metadata = obj.get("metadata")
        if (
            isinstance(metadata, dict)
            and isinstance(metadata.get("name"), str)
            and metadata["name"]
        ):
            return errors.object_error(label, obj, field, message)
        named = f"{errors.describe_object(obj)} ({place})"
        return errors.InputError(message, source=label, obj=named, field=field)

    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise error(key, "missing or not a string")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise error("metadata", "missing or not an object")
    name = metadata.get("name")
    generate = metadata.get("generateName")
    if (not isinstance(name, str) or not name) and isinstance(generate, str) and generate:
        # What the API server would do on create; stable so output stays diffable.
        name = metadata["name"] = generated_name(generate, index)
    if not isinstance(name, str) or not name:
        raise error("metadata.name", "missing or not a string")
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise error("metadata.namespace", "not a string")
    try:
        check_fields(obj)
    except errors.InputError as exc:
        raise error(exc.field or "metadata", exc.message) from None
    if not metadata.get("uid"):
        metadata["uid"] = default_uid(obj["kind"], namespace, name)
    if not metadata.get("creationTimestamp"):
        metadata["creationTimestamp"] = default_creation_timestamp(index)


def _read(source: str | Path, stdin: TextIO | None) -> tuple[str, str]:
    """Return (label, text) of one source; ``-`` reads standard input."""
    if str(source) == STDIN:
        return _STDIN_LABEL, (stdin if stdin is not None else sys.stdin).read()
    label = str(source)
    try:
        return label, Path(source).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise errors.InputError("no such file", source=label) from exc
    except IsADirectoryError as exc:
        raise errors.InputError("is a directory, not a file", source=label) from exc
    except UnicodeDecodeError as exc:
        raise errors.InputError(f"not UTF-8 text ({exc.reason})", source=label) from exc
    except OSError as exc:
        raise errors.InputError(f"cannot read: {exc.strerror or exc}", source=label) from exc


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large trees of fresh objects.

    Parsing allocates millions of dicts and lists and no cycles; the collector's
    repeated full passes over them cost PyYAML about 80% of its time (20k pods
    of YAML: about 23 s with the collector, 4 s without).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_once(
    obj: dict[str, Any], label: str, place: str, seen: dict[tuple[str, str, str, str], str]
) -> None:
    """Refuse a second object of the same group, kind, namespace and name: a cluster holds
    one, and two copies (two dumps concatenated, one pod Running in one and Pending in the
    other) would be counted twice. The first is kept, so the result does not depend on
    which copy a reader happens to take."""
    metadata = obj["metadata"]
    group = obj["apiVersion"].rpartition("/")[0]  # "v1" is the core group ""
    key = (group, obj["kind"], metadata.get("namespace") or "", metadata["name"])
    first = seen.get(key)
    if first is not None:
        raise errors.object_error(
            label, obj, "metadata.name", f"given twice (first in {first}); the first is kept"
        )
    seen[key] = f"{label} ({place})"


def load_documents(
    sources: Sequence[str | Path],
    *,
    stdin: TextIO | None = None,
    problems: list[errors.InputError] | None = None,
) -> list[SourcedObject]:
    """Read every object from ``sources`` in order, with defaults applied.

    ``sources`` are file paths or ``"-"`` (standard input, or ``stdin`` if
    given). Raises :class:`~crds.errors.InputError` on the first unreadable file or
    syntax error. A non-mapping document or an object without ``apiVersion``,
    ``kind`` or ``metadata.name`` is raised too, unless ``problems`` is given: then
    its error is added there and the object left out, so one broken object does not
    stop the others being read (docs/cli.md "Bad input").
    """
    out: list[SourcedObject] = []
    seen: dict[tuple[str, str, str, str], str] = {}  # (group, kind, namespace, name) -> where
    for source in sources:
        label, text = _read(source, stdin)
        with gc_paused():
            for place, obj in _iter_objects(parse_text(text, label), label, "", problems):
                try:
                    _check_and_default(obj, label, len(out), place)
                    _check_once(obj, label, place, seen)
                except errors.InputError as error:
                    if problems is None:
                        raise
                    problems.append(error)
                    continue
                out.append(SourcedObject(obj, label, len(out)))
    return out
