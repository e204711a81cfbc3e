"""Names and namespaces a caller passes in, checked before they reach a request path.

Every kind the service reads is named by a DNS-1123 subdomain (custom resources included) and
namespaces are DNS-1123 labels. Anything else cannot exist; passed on it would also change
the request itself ("a/b", "../..", "x?watch=true"). So it is refused as BAD_REQUEST before
any API call, instead of an access review and a read that answer NOT_FOUND or worse.
"""

from __future__ import annotations

import re

from kueue_graphql.core.errors import BadRequestError

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(_LABEL)
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 64 else value[:64] + "...")


def check_namespace(namespace: str) -> str:
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        raise BadRequestError(
            f"invalid namespace {_shown(namespace)}: at most 63 lowercase letters, digits "
            "and '-', starting and ending with a letter or digit"
        )
    return namespace


def is_name(name: str) -> bool:
    """Whether `name` can name an object (a DNS-1123 subdomain)."""
    return len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name) is not None


def check_name(name: str) -> str:
    if not is_name(name):
        raise BadRequestError(
            f"invalid name {_shown(name)}: at most 253 lowercase letters, digits, '-' and "
            "'.', starting and ending with a letter or digit"
        )
    return name
