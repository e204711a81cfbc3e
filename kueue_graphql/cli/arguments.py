"""`kueue-graphql`'s command line: the serve flags derive from the settings model (settings.py),
each taking its default from its KUEUE_GRAPHQL_* variable; why and fits add their own."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
from collections.abc import Mapping
from typing import Any, NoReturn

from kueue_graphql.cli.settings import REMOTE, SERVE, Kind, Setting, SettingError

COMMANDS = {
    "serve": "run the GraphQL server",
    "schema": "print the GraphQL schema (SDL)",
    "why": "why is my job waiting? (read as the kubeconfig's identity, or ask --server)",
    "fits": "would these Pods fit this LocalQueue now? (nothing is created)",
}
DESCRIPTION = (
    "A read-only GraphQL API over Kueue, and the commands that ask it from a terminal. Every "
    "setting of serve (and --server/--token of why and fits) can also be set by an environment "
    "variable KUEUE_GRAPHQL_<FLAG> (upper case, dashes as underscores; a flag wins); an empty, "
    "malformed or out-of-range value, or a KUEUE_GRAPHQL_* variable that is no setting, stops "
    "any command with exit status 2. `kueue-graphql COMMAND --help` describes each command."
)


class OneLineErrorParser(argparse.ArgumentParser):
    """A usage mistake is one line on stderr (naming the flag and what it accepts), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


class ReplaceDefaultList(argparse.Action):
    """A repeatable flag whose first use replaces the list its variable gave."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest)
        given = [] if current is self.default else list(current)
        setattr(namespace, self.dest, [*given, values])


class SettingsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in --help, except a secret's (a token from the environment is never echoed)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.dest in SECRET_DESTS:
            return action.help
        return super()._get_help_string(action)


SECRET_DESTS = frozenset(setting.dest for setting in SERVE + REMOTE if setting.secret)


def _flag_type(setting: Setting) -> Any:
    def parse(text: str) -> Any:
        try:
            return setting.parse(text, setting.flag)
        except SettingError as refused:
            # argparse names the flag itself: keep the rest of the sentence.
            raise argparse.ArgumentTypeError(
                str(refused).removeprefix(setting.flag + "=")
            ) from None

    parse.__name__ = setting.kind.value
    return parse


def add_setting(
    parser: argparse.ArgumentParser, setting: Setting, environ: Mapping[str, str]
) -> None:
    """The setting's flag, its default read from `environ` (SettingError when malformed)."""
    default = setting.from_env(environ)
    if setting.kind is Kind.SWITCH:
        note = f"env {setting.env}=true|false"
    elif setting.kind in (Kind.INT, Kind.FLOAT):
        note = f"{setting.accepted()}; env {setting.env}"
    else:
        note = f"env {setting.env}"
    options: dict[str, Any] = {
        "default": default,
        "help": f"{setting.help} ({note})".replace("%", "%%"),
    }
    if setting.metavar:
        options["metavar"] = setting.metavar
    if setting.kind is Kind.SWITCH:
        # On by default: `--no-FLAG` turns it off.
        options["action"] = argparse.BooleanOptionalAction if setting.default else "store_true"
    elif setting.kind is Kind.LIST:
        # Each flag's value is checked with the settings (an empty audience is refused there).
        options["action"] = ReplaceDefaultList
    else:
        options["type"] = _flag_type(setting)
        if setting.kind is Kind.CHOICE:
            options["choices"] = setting.choices
    parser.add_argument(setting.flag, **options)


def _version() -> str:
    try:
        return importlib.metadata.version("kueue-graphql")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """Every command's flags; SettingError when a KUEUE_GRAPHQL_* value cannot be used."""
    environ = os.environ if environ is None else environ
    parser = OneLineErrorParser(
        prog="kueue-graphql",
        description=DESCRIPTION,
    )
    parser.add_argument("--version", action="version", version=f"kueue-graphql {_version()}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )

    serve = commands.add_parser(
        "serve",
        help=COMMANDS["serve"],
        description="Run the GraphQL server. Every flag can also be set by an environment "
        "variable KUEUE_GRAPHQL_<FLAG> (e.g. KUEUE_GRAPHQL_PORT=9090); a flag wins. A switch's "
        "variable takes true/false, 1/0, yes/no or on/off.",
        formatter_class=SettingsHelpFormatter,
    )
    for setting in SERVE:
        add_setting(serve, setting, environ)

    commands.add_parser(
        "schema",
        help=COMMANDS["schema"],
        description="Print the GraphQL schema (SDL) the server serves, to stdout; no cluster "
        "needed. The same text is schema/schema.graphql.",
    )

    why = commands.add_parser(
        "why",
        help=COMMANDS["why"],
        description="Diagnose a Job (or another owner kind, or a Workload) with the identity of "
        "your kubeconfig, as the `diagnose` GraphQL field does. Targets as kubectl takes them: "
        "`-n team-a job/NAME`, `-n team-a NAME`, `team-a/NAME`, `workload/NAME`.",
        formatter_class=SettingsHelpFormatter,
    )
    why.add_argument("target", help="[KIND/]NAME with -n, or NAMESPACE/NAME")
    why.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, else default)"
    )
    why.add_argument("--kind", default=None, help='owner kind, or "Workload" (default: Job)')
    why.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")
    why.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig to read as"
    )
    why.add_argument("--context", default=None, help="kubeconfig context to use")
    why.add_argument(
        "--what-if",
        action="store_true",
        help="do not diagnose the Job: ask whether its pod template would fit now (whatIf "
        "fromJob), in its queue-name LocalQueue or --local-queue",
    )
    why.add_argument("--local-queue", default=None, help="with --what-if: another LocalQueue")
    for setting in REMOTE:
        add_setting(why, setting, environ)

    fits = commands.add_parser(
        "fits",
        help=COMMANDS["fits"],
        description="Kueue's flavor assignment and verdict for Pods not submitted yet, as the "
        "`whatIf` GraphQL field answers it (sbatch --test-only for Kueue). Exit status: 0 fits "
        "now, 3 must wait, 4 never fits, 5 queue inactive or unknown, 1 error, 2 bad usage.",
        formatter_class=SettingsHelpFormatter,
    )
    fits.add_argument(
        "local_queue", metavar="LOCALQUEUE", help="the LocalQueue the Pods would be submitted to"
    )
    fits.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the context's, else default)"
    )
    fits.add_argument("--pods", type=int, default=1, help="Pods that must run at once")
    fits.add_argument("--cpu", default=None, help="CPU per Pod, e.g. 1 or 500m")
    fits.add_argument("--memory", default=None, help="memory per Pod, e.g. 2Gi")
    fits.add_argument("--gpu", default=None, help="GPUs per Pod (resource --gpu-resource)")
    fits.add_argument("--gpu-resource", default="nvidia.com/gpu", help="the GPU resource name")
    fits.add_argument(
        "--request", action="append", default=[], metavar="RESOURCE=QUANTITY",
        help="any other resource per Pod; repeatable",
    )  # fmt: skip
    fits.add_argument(
        "--node-selector", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    fits.add_argument(
        "--toleration", action="append", default=[], metavar="KEY[=VALUE][:EFFECT]",
        help="a toleration of the Pods; repeatable",
    )  # fmt: skip
    fits.add_argument(
        "--priority-class", default=None, metavar="NAME",
        help="a WorkloadPriorityClass (else PriorityClass) for the Workload: its priority decides "
        "preemption within the ClusterQueue",
    )  # fmt: skip
    fits.add_argument("--json", action="store_true", help="print the GraphQL result as JSON")
    fits.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig to read as"
    )
    fits.add_argument("--context", default=None, help="kubeconfig context to use")
    for setting in REMOTE:
        add_setting(fits, setting, environ)
    return parser
