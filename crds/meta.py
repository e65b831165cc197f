"""Shared building blocks of the typed KAI API models.

Why a common base: every model must read and write KAI's exact JSON names
(camelCase, including KAI's irregular ``receivedGPU``/``transitionID``), keep a
manifest byte-for-byte equivalent on a round trip, and catch typos. The rules,
in one place:

* attributes are snake_case; the manifest name is the alias (``to_camel`` unless
  a field spells it out); both names are accepted on input
  (``populate_by_name``) and dumps use the alias by default;
* ``extra="forbid"``: a field the CRD does not define is an error, not silently
  dropped (the apiserver would prune it; a misspelt ``minmember`` should not
  vanish). Only :class:`ObjectMeta` and schema-free blobs (DRA allocation
  results) keep unknown fields;
* ``strict=True``: ``"4"`` is not an integer and ``1`` is not a boolean, as in
  the apiserver's schema validation;
* no code defaults are injected: an unset field stays ``None`` and is left out
  of :meth:`KaiModel.to_manifest`. KAI's CRDs declare no schema defaults either;
  the defaults KAI applies in Go are exposed as ``*_or_default`` helpers.

The ``Annotated`` markers (:class:`SchemaFormat`, :data:`QUANTITY`) carry the
OpenAPI facts (``format: int32``, int-or-string quantities) that the drift test
compares with the CRD manifests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Self

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from crds import durations, quantities

__all__ = [
    "INT32_MAX",
    "QUANTITY",
    "QUANTITY_PATTERN",
    "CelRule",
    "CreatePattern",
    "DateTime",
    "Int32",
    "KaiModel",
    "ListType",
    "Number",
    "ObjectMeta",
    "OwnerReference",
    "Quantity",
    "QuantityMarker",
    "ResourceList",
    "SchemaFormat",
    "rfc3339",
    "rfc3339_seconds",
    "strict_rfc3339_seconds",
]

_INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
"""The largest value of an ``int32`` field (replicas, counts): the API server refuses more."""


@dataclass(frozen=True, slots=True)
class SchemaFormat:
    """``Annotated`` marker: the OpenAPI ``format`` of a field (``int32``, ``date-time``)."""

    format: str


@dataclass(frozen=True, slots=True)
class CreatePattern:
    """``Annotated`` marker: a ``pattern`` the CRD schema states, so the API server holds new
    objects to it, but which reading does not enforce: an object stored under an earlier
    schema without it is still read (ratcheting validation keeps it updatable). Create
    paths (the webhook, ``podmuster group``) check it themselves."""

    pattern: str

    def matches(self, value: str) -> bool:
        return re.fullmatch(self.pattern, value) is not None


@dataclass(frozen=True, slots=True)
class QuantityMarker:
    """``Annotated`` marker: an int-or-string Kubernetes quantity."""


QUANTITY: Final = QuantityMarker()

QUANTITY_PATTERN: Final = (
    r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE][+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)))?$"
)
"""The schema pattern of an int-or-string quantity (the API server's own)."""


@dataclass(frozen=True, slots=True)
class ListType:
    """``Annotated`` marker: the list's ``x-kubernetes-list-type`` (``atomic``, ``set``)."""

    list_type: str


@dataclass(frozen=True, slots=True)
class CelRule:
    """``Annotated`` marker: a CEL rule the API server applies (``x-kubernetes-validations``).

    The rules that need no previous version are also checked by the model itself,
    so offline input gets the same errors.
    """

    rule: str
    message: str


def _check_int32(number: int) -> int:
    if not _INT32_MIN <= number <= INT32_MAX:
        raise ValueError(f"{number} does not fit in a 32-bit integer")
    return number


def rfc3339_seconds(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (``ValueError`` if it is none).

    A time without a zone offset (``2026-01-01T00:00:00``) or a bare date
    (``2026-01-01``, midnight) is read as UTC, never in the machine's local time
    zone: the same input gives the same clock on every machine.

    Not memoized: parsing takes about half a microsecond, and at scale (one
    timestamp per object, most of them distinct) a bounded cache misses on nearly
    every call and costs more than the parse it would save.
    """
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


_STRICT_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


def strict_rfc3339_seconds(text: str) -> float:
    """Seconds since the epoch of a full RFC 3339 date-time, zone included (``ValueError``
    otherwise): what Go's ``time.Parse(time.RFC3339, ...)`` accepts, for the timestamps
    KAI's scheduler writes and reads back (a bare date, a space for ``T`` or a missing
    zone, which :func:`rfc3339_seconds` reads, are refused)."""
    if not _STRICT_RFC3339.fullmatch(text):
        raise ValueError(f"{text!r} is not an RFC 3339 date-time")
    return rfc3339_seconds(text.upper())


def rfc3339(seconds: float) -> str:
    """The RFC 3339 timestamp (UTC, whole seconds) of seconds since the epoch."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_datetime(text: str) -> str:
    try:
        rfc3339_seconds(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 date-time") from None
    return text


def _check_duration(text: str) -> str:
    durations.seconds(text)
    return text


def _check_quantity(raw: int | float | str) -> int | float | str:
    quantities.parse_quantity(raw)
    return raw


Int32 = Annotated[int, SchemaFormat("int32"), AfterValidator(_check_int32)]
"""A Go ``int32`` field."""

DateTime = Annotated[str, SchemaFormat("date-time"), AfterValidator(_check_datetime)]
"""An RFC 3339 timestamp, kept as written so dumps round-trip exactly."""

Duration = Annotated[str, AfterValidator(_check_duration)]
"""A Go duration string (``metav1.Duration``: ``30s``, ``1h30m``), kept as written;
read in seconds with :func:`crds.durations.seconds`."""

Number = int | float
"""A Go ``float64`` field; an integer stays an integer on a round trip."""

Quantity = Annotated[int | float | str, QUANTITY, AfterValidator(_check_quantity)]
"""A quantity as written (validated, not converted); parse with :mod:`crds.quantities`."""

ResourceList = dict[str, Quantity]
"""Resource name → quantity, as in a Kubernetes ``ResourceList``."""


class KaiModel(BaseModel):
    """Base of every KAI API model: camelCase aliases, strict, unknown fields rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        use_attribute_docstrings=True,
    )

    def to_manifest(self) -> dict[str, Any]:
        """The manifest form: KAI's field names, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True)

    def to_patch(self) -> dict[str, Any]:
        """A JSON merge patch: the fields that were set, an explicit ``None`` removing one."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> Self:
        """Validate a manifest mapping (raises ``pydantic.ValidationError``)."""
        return cls.model_validate(manifest)


class OwnerReference(KaiModel):
    """``metadata.ownerReferences[]`` entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KaiModel):
    """The parts of ``metadata`` podmuster reads; every other key is kept as is."""

    model_config = ConfigDict(extra="allow")

    name: str
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creation_timestamp: DateTime | None = None
    deletion_timestamp: DateTime | None = None
    owner_references: list[OwnerReference] | None = None
    resource_version: str | None = None
    generation: int | None = None
    generate_name: str | None = None
    finalizers: list[str] | None = None

    def label(self, key: str) -> str | None:
        """The value of label ``key``, or ``None``."""
        return (self.labels or {}).get(key)

    def annotation(self, key: str) -> str | None:
        """The value of annotation ``key``, or ``None``."""
        return (self.annotations or {}).get(key)
