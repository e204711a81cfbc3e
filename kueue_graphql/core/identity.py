"""Who is calling: the identity TokenReview (or the kubeconfig) vouches for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Identity:
    """An authenticated Kubernetes user, exactly as the API server described it.

    Frozen and hashable so that it can be part of cache keys: two identities share a cached
    authorization decision only when every attribute (user, uid, all groups, all extras) is equal.
    """

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # Sorted (key, values) pairs rather than a dict, to stay hashable and order-independent.
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @classmethod
    def from_user_info(cls, user: Mapping[str, object]) -> Identity:
        """Build from a `UserInfo` object (TokenReview / SelfSubjectReview status)."""
        username = user.get("username")
        if not isinstance(username, str) or not username:
            raise ValueError("UserInfo has no username")
        uid = user.get("uid")
        groups = user.get("groups") or []
        extra = user.get("extra") or {}
        if not isinstance(groups, Sequence) or not isinstance(extra, Mapping):
            raise ValueError("UserInfo has malformed groups or extra")
        return cls(
            username=username,
            uid=uid if isinstance(uid, str) else "",
            # A static token file line with an empty group column yields the group "": it is
            # no group, and constrained impersonation refuses to impersonate it.
            groups=tuple(str(g) for g in groups if g),
            extra=tuple(
                sorted((str(key), tuple(str(v) for v in values)) for key, values in extra.items())
            ),
        )

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when this is a ServiceAccount (`system:serviceaccount:NS:NAME`)."""
        prefix = "system:serviceaccount:"
        if not self.username.startswith(prefix):
            return None
        parts = self.username[len(prefix) :].split(":")
        if len(parts) != 2 or not all(parts):
            return None
        return parts[0], parts[1]

    @property
    def extra_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.extra}
