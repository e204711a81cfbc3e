"""Global object ids (Relay's object identification): opaque, stable, name-based.

An id is the unpadded URL-safe base64 of `1/<Type>/<key>/<key>...`: a format version, the
GraphQL type, and the key the type's own root field takes (`namespace/name`, with an empty
namespace for cluster-scoped objects; a diagnosis adds the kind it started from). Names, not
UIDs: an id in a link or a cache still finds the object after it was deleted and created again
under the same name, as the typed fields do.

Decoding is bounded: text longer than MAX_ID_LENGTH is refused before it is decoded, and only
the canonical encoding of a well-formed payload is accepted (so one object has one id). Every
refusal is a BadRequestError, raised before any API call.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from kueue_graphql.core.errors import BadRequestError

VERSION = "1"
# Longest payload: version, a type name, a 63-character namespace, a kind and a 253-character
# name: well under 600 characters once encoded.
MAX_ID_LENGTH = 1024
_HINT = "use an `id` this API returned"


@dataclass(frozen=True)
class GlobalId:
    type_name: str
    keys: tuple[str, ...]


def encode_id(type_name: str, *keys: str) -> str:
    payload = "/".join((VERSION, type_name, *keys)).encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_id(text: str) -> GlobalId:
    """The type and keys of an id; BadRequestError when it is not one this API issues."""
    if len(text) > MAX_ID_LENGTH:
        raise BadRequestError(f"invalid id: longer than {MAX_ID_LENGTH} characters; {_HINT}")
    try:
        payload = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (ValueError, binascii.Error):
        raise BadRequestError(f"invalid id: not an id of this API; {_HINT}") from None
    version, _, rest = payload.partition("/")
    if version != VERSION:
        raise BadRequestError(f"invalid id: not an id of this API (format version); {_HINT}")
    type_name, *keys = rest.split("/")
    if not type_name or not keys or encode_id(type_name, *keys) != text:
        raise BadRequestError(f"invalid id: not an id of this API; {_HINT}")
    return GlobalId(type_name, tuple(keys))
