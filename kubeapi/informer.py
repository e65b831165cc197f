"""List-then-watch one kind, forever: the one informer loop of every live component.

Why this module exists: the scheduler's informers, the binder, the status controllers
and the node-scale-adjuster all keep a copy of some kinds current the same way, as
client-go's reflector does: list (paged by the server, each page handed over as it
arrives), watch from the list's ``resourceVersion`` (bookmarks advance it), resume from
the last version seen when the server ends a stream, list again on 410 Gone, and back
off (:class:`~kubeapi.backoff.Backoff`) on any other failure.  What a component does
with a list and an event is its own (:class:`Handler`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from kubeapi.backoff import Backoff
from kubeapi.errors import ApiError, GoneError
from kubeapi.objects import Object
from kubeapi.protocol import KubeWatcher, Listing

__all__ = ["Handler", "list_and_watch"]

log = logging.getLogger("podmuster.informer")


class Handler(Protocol):
    """What an informer feeds: pages while listing, the complete list, then events."""

    def page(self, items: list[Object]) -> None:
        """One page of a list as it arrives (the next may be in flight meanwhile)."""

    def listed(self, listing: Listing) -> None:
        """The complete list (first, or after 410 Gone): everything else is gone."""

    def event(self, event_type: str, obj: Object) -> None:
        """ADDED, MODIFIED or DELETED (bookmarks are not passed on)."""


async def list_and_watch(
    api: KubeWatcher,
    api_version: str,
    kind: str,
    handler: Handler,
    *,
    backoff: Backoff | None = None,
    watch_timeout: int = 300,
) -> None:
    """Keep ``handler`` fed with ``kind``; runs until cancelled (see the module docstring)."""
    backoff = backoff or Backoff()
    version = ""
    while True:
        try:
            if not version:
                listing = await api.list_all(api_version, kind, on_page=handler.page)
                handler.listed(listing)
                version = listing.resource_version
            async for event in api.watch(api_version, kind, version, timeout_seconds=watch_timeout):
                if event.type != "BOOKMARK":
                    handler.event(event.type, event.object)
                version = event.resource_version or version
            backoff.reset()
        except GoneError:
            log.info("watch of %s expired at version %s; listing again", kind, version)
            version = ""
        except ApiError as exc:
            delay = backoff.next_delay()
            log.warning("%s informer: %s; retrying in %.1fs", kind, exc, delay)
            await asyncio.sleep(delay)
