"""The error tree every :mod:`kubeapi` implementation raises.

Why this module exists: callers decide retry-or-give-up on these classes, never on an
HTTP library's exceptions; implementations chain the original error as the cause.

Error tree::

    ApiError                 any failed API call; names the object (Kind ns/name)
    ├── NotFoundError        404
    ├── ForbiddenError       403 (RBAC)
    ├── ConflictError        409 (stale resourceVersion, AlreadyExists); retryable
    ├── GoneError            410 on a list or watch: the resourceVersion is too old; relist
    └── TransientError       5xx, 429, timeouts, connection failures; retryable
"""

from __future__ import annotations

from kubeapi.objects import ObjectRef


class ApiError(Exception):
    """An API call failed; ``ref`` is the object (or collection) it was about."""

    retryable = False

    def __init__(self, ref: ObjectRef | str, message: str, status: int = 0) -> None:
        self.ref = ref
        self.status = status
        self.message = message
        super().__init__(f"{ref}: {message}" + (f" (HTTP {status})" if status else ""))


class NotFoundError(ApiError):
    """The object does not exist."""


class ForbiddenError(ApiError):
    """RBAC does not allow the call."""


class ConflictError(ApiError):
    """A write lost a race (stale resourceVersion) or the object already exists."""

    retryable = True


class GoneError(ApiError):
    """The resourceVersion a watch resumes from was compacted away: list again."""

    retryable = True


class TransientError(ApiError):
    """The server or the network failed in a way that may pass: retry with back-off."""

    retryable = True


def error_for_status(ref: ObjectRef | str, status: int, message: str) -> ApiError:
    """The error class for an HTTP ``status``."""
    if status == 404:
        return NotFoundError(ref, message, status)
    if status == 403:
        return ForbiddenError(ref, message, status)
    if status == 409:
        return ConflictError(ref, message, status)
    if status == 410:
        return GoneError(ref, message, status)
    if status == 429 or status >= 500:
        return TransientError(ref, message, status)
    return ApiError(ref, message, status)
