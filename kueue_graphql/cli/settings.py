"""Every setting of `kueue-graphql`, declared once: its flag, its environment variable
KUEUE_GRAPHQL_<FLAG>, type, default, accepted values and help. The argparse flags, the
environment lookups, the startup checks and the docs' settings table all derive from SETTINGS.

A value that is empty, not a number, not a boolean, out of range or not one of the choices is
refused with one line naming the flag or variable and what it accepts; so is a KUEUE_GRAPHQL_*
variable that is not a setting (a misspelt name).
"""

from __future__ import annotations

import difflib
import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kueue_graphql.core.modes import (
    MAX_READYZ_TIMEOUT_SECONDS,
    MAX_TOKEN_CACHE_TTL_SECONDS,
    MIN_ANALYSIS_BACKSTOP_SECONDS,
    AuthMode,
    QuotaDisclosure,
    ReadMode,
)

ENV_PREFIX = "KUEUE_GRAPHQL_"
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")
# Kubernetes gives a Pod variables named after each Service of its namespace: the chart's Service
# `kueue-graphql` would make KUEUE_GRAPHQL_PORT=tcp://..., KUEUE_GRAPHQL_SERVICE_HOST, ...
SERVICE_LINKS = "set enableServiceLinks: false in the Pod spec, as the chart does"
SERVICE_LINK_NAME = re.compile(r"_SERVICE_(HOST|PORT)|_PORT_\d+_")


class SettingError(ValueError):
    """A setting's value (or an environment variable's name) that cannot be used: one line."""


class Kind(enum.Enum):
    INT = "int"
    FLOAT = "float"
    SWITCH = "switch"  # a flag without a value; its variable takes a boolean word
    TEXT = "text"
    PATH = "path"
    CHOICE = "choice"
    LIST = "list"  # a repeatable flag; its variable takes a comma-separated list


Value = int | float | bool | str | Path | tuple[str, ...] | None


@dataclass(frozen=True)
class Setting:
    """One setting. `flag` is its long option; the variable and the argparse dest follow."""

    flag: str
    kind: Kind
    default: Value
    help: str
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None  # an exclusive lower bound
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    # Why the bounds are what they are, said when a value is refused.
    why: str = ""
    # Read when neither the flag nor its own variable is set (KUBECONFIG).
    fallback_env: str | None = None
    # A credential: its value is never shown (no default in --help).
    secret: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag.removeprefix("--").upper().replace("-", "_")

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def accepted(self) -> str:
        """What this setting accepts, as the end of a sentence."""
        if self.kind is Kind.SWITCH:
            return "one of " + ", ".join(TRUE_WORDS + FALSE_WORDS) + " (any case)"
        if self.kind is Kind.CHOICE:
            return "one of " + ", ".join(self.choices)
        if self.kind is Kind.LIST:
            return "a comma-separated list"
        if self.kind in (Kind.TEXT, Kind.PATH):
            return "a non-empty value"
        noun = "a whole number" if self.kind is Kind.INT else "a number"
        low = f"above {self.above:g}" if self.above is not None else None
        if low is None and self.minimum is not None:
            low = f"at least {self.minimum:g}"
        if low is not None and self.maximum is not None:
            if self.minimum is not None:
                return f"{noun} from {self.minimum:g} to {self.maximum:g}"
            return f"{noun} {low} and at most {self.maximum:g}"
        if low is not None:
            return f"{noun} {low}"
        if self.maximum is not None:
            return f"{noun} at most {self.maximum:g}"
        return noun

    def parse(self, text: str, source: str) -> Value:
        """`text` as this setting's value; SettingError naming `source` (the flag or variable)."""

        def refuse(problem: str) -> SettingError:
            why = f" ({self.why})" if self.why else ""
            return SettingError(
                f"{source}={text[:80]!r} {problem}; accepted: {self.accepted()}{why}"
            )

        if not text.strip():
            raise refuse("is empty: give a value, or leave it out for the default")
        if self.kind is Kind.SWITCH:
            word = text.strip().lower()
            if word not in TRUE_WORDS + FALSE_WORDS:
                raise refuse("is not a boolean")
            return word in TRUE_WORDS
        if self.kind is Kind.CHOICE:
            if text not in self.choices:
                raise refuse("is not a known value")
            return text
        if self.kind is Kind.LIST:
            items = tuple(item.strip() for item in text.split(",") if item.strip())
            if not items:
                raise refuse("names nothing")
            return items
        if self.kind is Kind.TEXT:
            return text
        if self.kind is Kind.PATH:
            return Path(text)
        number: float
        try:
            number = int(text) if self.kind is Kind.INT else float(text)
        except ValueError:
            problem = "is not a whole number" if self.kind is Kind.INT else "is not a number"
            if text.startswith("tcp://"):
                problem += f" (a Service link variable: {SERVICE_LINKS})"
            raise refuse(problem) from None
        if not math.isfinite(number) or not self.admits(number):
            raise refuse("is out of range")
        return number

    def admits(self, number: float) -> bool:
        return not (
            (self.minimum is not None and number < self.minimum)
            or (self.maximum is not None and number > self.maximum)
            or (self.above is not None and number <= self.above)
        )

    def from_env(self, environ: Mapping[str, str]) -> Value:
        """The value the environment gives (the default when it gives none)."""
        if self.env in environ:
            return self.parse(environ[self.env], self.env)
        if self.fallback_env is not None and environ.get(self.fallback_env):
            return self.parse(environ[self.fallback_env], self.fallback_env)
        return self.default


def _count(flag: str, default: int, help: str, *, minimum: int = 1) -> Setting:
    return Setting(flag, Kind.INT, default, help, minimum=minimum)


def _seconds(
    flag: str,
    default: float,
    help: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
) -> Setting:
    return Setting(flag, Kind.FLOAT, float(default), help, minimum=minimum, above=above)


def _switch(flag: str, help: str, *, default: bool = False) -> Setting:
    """A switch; one that is on by default also gets its `--no-` form."""
    return Setting(flag, Kind.SWITCH, default, help)


def _choice(flag: str, choices: list[str], default: str, help: str) -> Setting:
    return Setting(flag, Kind.CHOICE, default, help, choices=tuple(choices))


PORT_MAX = 65535

# `kueue-graphql serve`, in the order --help lists them.
SERVE: tuple[Setting, ...] = (
    Setting(
        "--kubeconfig",
        Kind.TEXT,
        None,
        "kubeconfig of the service's own identity ($KUBECONFIG, else ~/.kube/config)",
        fallback_env="KUBECONFIG",
    ),
    Setting("--context", Kind.TEXT, None, "kubeconfig context to use (default: its current one)"),
    _switch(
        "--in-cluster",
        "use the pod's ServiceAccount (KUBERNETES_SERVICE_HOST/PORT and its mounted token)",
    ),
    Setting("--host", Kind.TEXT, "127.0.0.1", "address to listen on"),
    Setting(
        "--port",
        Kind.INT,
        8080,
        "port to listen on (0: any free port)",
        minimum=0,
        maximum=PORT_MAX,
    ),
    Setting(
        "--metrics-host", Kind.TEXT, None, "address of the /metrics listener (default: --host)"
    ),
    Setting(
        "--metrics-port",
        Kind.INT,
        9090,
        "port of the /metrics listener, apart from the API's (0: no /metrics at all)",
        minimum=0,
        maximum=PORT_MAX,
    ),
    _choice(
        "--auth-mode",
        [m.value for m in AuthMode],
        AuthMode.TOKEN_REVIEW.value,
        "token-review: identify callers by bearer token and impersonate them; "
        "local: read as the kubeconfig identity (loopback only)",
    ),
    _switch(
        "--allow-get-queries",
        "accept queries over GET (?query=... or a persisted query's hash), answered with "
        "Cache-Control: private, no-store; --no-allow-get-queries turns them off "
        "(subscriptions are never served over GET)",
        default=True,
    ),
    _switch("--no-graphiql", "do not serve the GraphiQL page on GET /graphql"),
    Setting(
        "--graphiql-assets",
        Kind.PATH,
        None,
        "serve GraphiQL's JavaScript and CSS from DIR (the same pinned file names, e.g. from "
        "`scripts/fetch_graphiql_assets.py DIR`) instead of the copies packaged with "
        "kueue-graphql; GraphiQL never loads anything from the internet",
        metavar="DIR",
    ),
    _switch(
        "--no-admission-map",
        "do not serve the admission map (GET /why/<namespace>/<kind>/<name> and its files "
        "under /admission-map/)",
    ),
    Setting(
        "--cors-allow-origin",
        Kind.LIST,
        (),
        "a browser origin (https://host[:port]) allowed to call /graphql; repeatable "
        "(env: comma-separated, replaced by any flag); none by default. CORS allows the "
        "Authorization and Content-Type headers, exposes X-Request-Id, sends no credentials",
        metavar="ORIGIN",
    ),
    _count(
        "--max-body-bytes",
        65536,
        "the size cap of every GraphQL document however it arrives, checked before parsing: "
        "larger request bodies get 413, GET query strings 414, WebSocket messages (after "
        "permessage-deflate) close 1009",
    ),
    _count(
        "--persisted-queries-max-bytes",
        8 * 1024 * 1024,
        "size of the store of automatic persisted queries (Apollo's APQ: documents kept by "
        "their SHA-256, least recently used out first), in bytes of documents; 0: persisted "
        "queries off (PERSISTED_QUERY_NOT_SUPPORTED)",
        minimum=0,
    ),
    Setting(
        "--trusted-documents",
        Kind.PATH,
        None,
        "serve only the documents of FILE, a JSON object {sha256 hex of the document: "
        "document} (graphql-codegen's persisted-documents.json), loaded and checked against "
        "the schema at start; any other document is refused before parsing with "
        "PERSISTED_QUERY_NOT_ALLOWED",
        metavar="FILE",
    ),
    _count("--max-fields", 2000, "most fields in one query, fragments expanded"),
    _count(
        "--max-cost",
        50000,
        "highest estimated cost of one query (fields x the `first` of the lists around them); "
        "over it: BAD_REQUEST before any API call",
    ),
    _count(
        "--max-concurrent-requests",
        100,
        "requests served at once; more get 503 UNAVAILABLE with Retry-After (/healthz exempt)",
    ),
    _seconds(
        "--header-timeout",
        10,
        "seconds a connection may take to send its request headers (then 408)",
        above=0,
    ),
    _seconds(
        "--body-timeout", 10, "seconds a request may take to send its body (then 408)", above=0
    ),
    _seconds("--request-timeout", 20, "seconds a request may take, API calls included", above=0),
    _count("--max-depth", 12, "deepest selection nesting accepted"),
    _count("--max-aliases", 30, "most aliases in one query", minimum=0),
    _count("--max-tokens", 2000, "most lexical tokens in one query"),
    _count("--api-call-budget", 200, "most Kubernetes API calls one request may make"),
    _count("--max-page-size", 100, "largest `first` of a list field"),
    _seconds(
        "--authz-cache-ttl",
        10,
        "seconds a granted access decision is reused for the same caller",
        minimum=0,
    ),
    _choice("--log-level", ["debug", "info", "warning", "error"], "info", "log level"),
    _choice(
        "--log-format",
        ["text", "json"],
        "text",
        "json: one JSON object per line, one line per GraphQL request (request id, "
        "operation, outcome, duration, apiCalls, username; never a token)",
    ),
    Setting(
        "--token-cache-ttl",
        Kind.FLOAT,
        30.0,
        "seconds a TokenReview answer is reused for the same token",
        minimum=0,
        maximum=MAX_TOKEN_CACHE_TTL_SECONDS,
        why="a revoked token keeps working through the service for that long",
    ),
    Setting(
        "--token-audience",
        Kind.LIST,
        (),
        "accept only bearer tokens minted for this audience (TokenReview spec.audiences, "
        "e.g. `kubectl create token SA --audience AUDIENCE`); repeatable (env: "
        "comma-separated, replaced by any flag); none: the API server's own audiences, which "
        "kubectl's and pods' default tokens carry",
        metavar="AUDIENCE",
    ),
    _count(
        "--max-subscriptions-per-connection",
        20,
        "most subscriptions open on one WebSocket connection",
    ),
    _count(
        "--max-subscriptions-per-identity",
        100,
        "most subscriptions open for one caller, over all connections",
    ),
    _count("--max-subscriptions", 1000, "most subscriptions open in total"),
    _seconds(
        "--subscription-coalesce-ms",
        250,
        "milliseconds a burst of watch events is gathered into one recompute",
        minimum=0,
    ),
    _count(
        "--subscription-send-queue",
        16,
        "messages a subscription may have waiting for a client that is not reading; "
        "one more ends it with SLOW_CONSUMER",
    ),
    _seconds(
        "--subscription-send-timeout",
        10,
        "seconds a WebSocket's sends may wait for a client that is not reading before the "
        "connection is closed with 4008 SLOW_CONSUMER",
        minimum=0.1,
    ),
    _seconds(
        "--authz-deny-cache-ttl",
        2,
        "seconds a denied access decision is reused (at most --authz-cache-ttl)",
        minimum=0,
    ),
    _count(
        "--keep-alive-timeout",
        5,
        "seconds an idle kept-alive connection stays open between requests",
        minimum=0,
    ),
    _seconds(
        "--api-timeout",
        10,
        "seconds one Kubernetes API call may take (then UNAVAILABLE)",
        above=0,
    ),
    Setting(
        "--readyz-timeout",
        Kind.FLOAT,
        1.5,
        "seconds /readyz waits for the API server before answering 503",
        above=0,
        maximum=MAX_READYZ_TIMEOUT_SECONDS,
        why="a probe's own timeout",
    ),
    _count("--max-json-depth", 32, "deepest nesting of arrays and objects in a request body"),
    _count("--max-operation-name-length", 128, "longest operationName accepted"),
    _count(
        "--max-analysis-units",
        20000,
        "work units analysing one new query may take (a field, fragment spread or argument "
        "value visited, each fragment once, and a field comparison: one unit each); the same "
        "decision on any machine at any load",
    ),
    Setting(
        "--max-analysis-ms",
        Kind.FLOAT,
        5000.0,
        "wall-clock backstop, in milliseconds, for analysing one new query",
        minimum=MIN_ANALYSIS_BACKSTOP_SECONDS * 1000,
        why="only a wall-clock backstop, and a smaller one refuses legitimate queries when the "
        "machine is loaded; limit queries with --max-analysis-units",
    ),
    _count(
        "--max-comparisons",
        10000,
        "most field comparisons validating one query may need (repeated fields/fragments)",
    ),
    _count("--max-number-length", 40, "longest number literal in a query, in characters"),
    _choice(
        "--quota-disclosure",
        [level.value for level in QuotaDisclosure],
        QuotaDisclosure.NONE.value,
        "none: ClusterQueue figures only for callers who may read the ClusterQueue; verdict: "
        "whatIf verdicts for callers who may get one of its LocalQueues; quota: also its "
        "quota, usage and headroom (read under the service's own identity)",
    ),
    _choice(
        "--read-mode",
        [mode.value for mode in ReadMode],
        ReadMode.IMPERSONATE.value,
        "impersonate: every read made as the caller; cache: Kueue objects from a watch-fed "
        "cache read under the service's identity (needs get/list/watch on them), each one "
        "authorized for the caller by SubjectAccessReview",
    ),
    Setting(
        "--worker-kubeconfig",
        Kind.LIST,
        (),
        "MultiKueue: the service's own read-only kubeconfig for one worker cluster, NAME the "
        "worker's MultiKueueCluster on the manager; repeatable, one per worker (env: "
        "comma-separated, replaced by any flag); never the Secret the manager's Kueue uses. "
        "Read at start; nothing reads the workers yet",
        metavar="NAME=PATH",
    ),
    _switch(
        "--no-cache-gc-freeze",
        "cache read mode: do not freeze the cached objects out of the garbage collector once "
        "the informers have synced (frozen by default: full collections then skip them)",
    ),
)

# `why` and `fits` asking a running server instead of reading with the kubeconfig.
REMOTE: tuple[Setting, ...] = (
    Setting(
        "--server",
        Kind.TEXT,
        None,
        "URL of a running kueue-graphql (e.g. https://kueue-graphql.example): ask it over HTTP "
        "instead of reading with the kubeconfig here",
    ),
    Setting("--token", Kind.TEXT, None, "with --server: the bearer token to send", secret=True),
)

SETTINGS: tuple[Setting, ...] = SERVE + REMOTE


def unknown_variable(environ: Mapping[str, str]) -> str | None:
    """One line about the first KUEUE_GRAPHQL_* variable that is no setting, or None."""
    known = [setting.env for setting in SETTINGS]
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in known:
            if SERVICE_LINK_NAME.search(name):
                return f"{name} is not a setting but a Service link variable: {SERVICE_LINKS}"
            closest = difflib.get_close_matches(name, known, n=1, cutoff=0)[0]
            return (
                f"{name} is not a setting: did you mean {closest}? "
                "(`kueue-graphql serve --help` lists every variable)"
            )
    return None


def settings_table() -> str:
    """The Markdown table of every `serve` setting, as docs/service.md carries it."""
    rows = ["| flag | env | default | accepted | meaning |", "|---|---|---|---|---|"]
    for setting in SERVE:
        flag = f"`{setting.flag}`" + (f" {setting.metavar}" if setting.metavar else "")
        env = f"`{setting.env}`"
        if setting.fallback_env:
            env += f" (or `{setting.fallback_env}`)"
        default = _shown_default(setting)
        meaning = setting.help + (f" ({setting.why})" if setting.why else "")
        rows.append(
            f"| {flag} | {env} | {default} | {setting.accepted()} | {meaning.replace('|', '/')} |"
        )
    return "\n".join(rows) + "\n"


def _shown_default(setting: Setting) -> str:
    if setting.kind is Kind.SWITCH:
        return "on" if setting.default else "off"
    if setting.default in (None, ()):
        return "unset"
    if isinstance(setting.default, float) and setting.default.is_integer():
        return f"`{setting.default:g}`"
    return f"`{setting.default}`"
