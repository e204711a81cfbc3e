"""Which media type a GraphQL answer is written in, from the request's `Accept` header
(GraphQL over HTTP, "Body"; RFC 9110 q-values).

`application/graphql-response+json` when the client ranks it highest (its status codes say what
happened: 4xx and no `data` for a request that was not executed); `application/json` otherwise,
as before that media type existed: with no `Accept` header, with `*/*` or `application/*` alone,
or ranked higher. None when the header names neither (nor a wildcard covering them): the server
answers 406 Not Acceptable, as the spec recommends.

The header is parsed with bounded cost: at most MAX_ACCEPT_CHARACTERS characters and
MAX_MEDIA_RANGES ranges are looked at; clients send a handful.
"""

from __future__ import annotations

import functools
from enum import StrEnum

MAX_ACCEPT_CHARACTERS = 1024
MAX_MEDIA_RANGES = 32


class ResponseMedia(StrEnum):
    JSON = "application/json"
    GRAPHQL_RESPONSE = "application/graphql-response+json"

    @property
    def content_type(self) -> str:
        return f"{self.value}; charset=utf-8"


def _quality(parameters: list[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value.strip())
            except ValueError:
                return 0.0
            return quality if 0.0 <= quality <= 1.0 else 0.0
    return 1.0


@functools.lru_cache(maxsize=64)
def negotiate(accept: str | None) -> ResponseMedia | None:
    """The media type to answer in; None when `accept` admits none this server writes."""
    if accept is None or not accept.strip():
        return ResponseMedia.JSON
    # For each media type: (specificity of the range that decides it, its quality, position).
    best: dict[ResponseMedia, tuple[int, float, int]] = {}
    ranges = accept[:MAX_ACCEPT_CHARACTERS].split(",")[:MAX_MEDIA_RANGES]
    for position, media_range in enumerate(ranges):
        name, *parameters = media_range.split(";")
        name = name.strip().lower()
        quality = _quality(parameters)
        for media in ResponseMedia:
            if name == media.value:
                specificity = 2
            elif name == "application/*":
                specificity = 1
            elif name == "*/*":
                specificity = 0
            else:
                continue
            # The most specific range that matches decides (RFC 9110, 12.5.1).
            if media not in best or specificity > best[media][0]:
                best[media] = (specificity, quality, position)
    acceptable = [
        (quality, specificity, -position, media is ResponseMedia.JSON, media)
        for media, (specificity, quality, position) in best.items()
        if quality > 0
    ]
    if not acceptable:
        return None
    # Highest quality; then a type named over one a wildcard covers (a wildcard alone:
    # application/json, for clients written before the new type); then the first listed.
    return max(acceptable)[-1]
