"""The one shared ApiClient, with a REST layer that can repeat a header and ignores the proxy env.

kubernetes_asyncio keeps request headers in a dict, so a caller in two groups would be
impersonated with only one `Impersonate-Group` header and silently lose the other group's
access. aiohttp accepts a multidict, so the REST layer here expands list-valued headers into one
header line per value.

kubernetes_asyncio also hard-codes `trust_env=True` on its aiohttp session, which makes every
request look up HTTP(S)_PROXY/NO_PROXY and ~/.netrc (in a thread pool): 18-30% of the service's
CPU samples on the warm admission path. The kubeconfig names the API server and its proxy
(`proxy-url`, honoured through `configuration.proxy`), so the environment is not consulted.

`exchange` sends one request on that session directly. kubernetes_asyncio's `call_api` wraps
each request in generic parameter sanitizing and re-encoding meant for its typed models; the
service sends JSON and reads bytes, and that wrapping was a quarter of the CPU of each API call.
The credentials still come from the configuration on every request (`auth_settings`, which runs
the refresh hook of an in-cluster token or an exec plugin), the client certificate and CA from
the session's connector.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import rest as k8s_rest
from multidict import CIMultiDict

from kueue_graphql.kube.kubeconfig_error import KubeConfigError

IMPERSONATE_PREFIX = "impersonate-"


def header_lines(headers: Mapping[str, Any]) -> CIMultiDict[str]:
    """The headers as lines on the wire: a list or tuple value becomes one line per item."""
    expanded: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if isinstance(value, list | tuple):
            for item in value:
                expanded.add(name, str(item))
        else:
            expanded.add(name, str(value))
    return expanded


class RepeatedHeaderRESTClient(k8s_rest.RESTClientObject):
    """RESTClientObject that sends list-valued headers as repeated header lines, on an aiohttp
    session that does not read proxy settings or ~/.netrc from the environment."""

    # kubernetes_asyncio's own value: watch events of large objects exceed aiohttp's default.
    READ_BUFFER_BYTES = 2**21

    def __init__(self, configuration: Any, **kwargs: Any) -> None:
        super().__init__(configuration, **kwargs)
        # Same connector (TLS settings, pool size), new session without trust_env. The parent's
        # session is kept so it is not collected unclosed; closing the connector closes both.
        self._trusting_session = self.pool_manager
        self.pool_manager = aiohttp.ClientSession(
            connector=self._trusting_session.connector,
            trust_env=False,
            read_bufsize=self.READ_BUFFER_BYTES,
        )

    async def request(  # type: ignore[override]
        self, method: str, url: str, query_params: Any = None, headers: Any = None, **kwargs: Any
    ) -> Any:
        expanded = header_lines(headers or {})
        # The parent only needs `in`, item get/set and del on headers, which CIMultiDict offers.
        return await super().request(
            method,
            url,
            query_params=query_params,
            headers=expanded,  # type: ignore[arg-type]
            **kwargs,
        )

    async def exchange(
        self,
        method: str,
        url: str,
        *,
        query: Sequence[tuple[str, str]],
        headers: CIMultiDict[str],
        body: bytes | None,
        total_seconds: float,
    ) -> RawResponse:
        """One request on the shared session; the whole answer, whatever its status."""
        if query:
            url += "?" + urlencode(query)
        async with self.pool_manager.request(
            method,
            url,
            headers=headers,
            data=body,
            timeout=aiohttp.ClientTimeout(total=total_seconds),
            proxy=self.proxy,
            proxy_headers=self.proxy_headers,
            server_hostname=self.server_hostname,
        ) as response:
            payload = await response.read()
            return RawResponse(response.status, payload, response.headers.get("Retry-After"))


@dataclass(frozen=True)
class RawResponse:
    status: int
    payload: bytes
    retry_after: str | None


def install_repeated_header_rest_client(api_client: Any) -> None:
    configuration = api_client.configuration
    original = api_client.rest_client
    api_client.rest_client = RepeatedHeaderRESTClient(configuration)
    # The replaced client owns an aiohttp session that would otherwise leak unclosed.
    api_client._replaced_rest_client = original


async def close_api_client(api_client: Any) -> None:
    replaced = getattr(api_client, "_replaced_rest_client", None)
    if replaced is not None:
        await replaced.close()
    await api_client.close()


def assert_no_impersonation_defaults(api_client: Any) -> None:
    """Default headers override per-call ones, so an Impersonate-* default would make every
    caller the same user. Refuse to run with one."""
    for name in api_client.default_headers:
        if name.lower().startswith(IMPERSONATE_PREFIX):
            raise RuntimeError(f"shared ApiClient must not carry default header {name}")


IN_CLUSTER_SECRETS = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def _kubeconfig_paths(kubeconfig: str | None) -> list[Path]:
    if kubeconfig:
        return [Path(p).expanduser() for p in kubeconfig.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def _check_kubeconfig(kubeconfig: str | None, context: str | None) -> None:
    """The mistakes a first run makes, each as one sentence that says what to do."""
    paths = _kubeconfig_paths(kubeconfig)
    existing = [p for p in paths if p.is_file()]
    if not existing:
        if kubeconfig:
            missing = ", ".join(str(p) for p in paths)
            raise KubeConfigError(
                f"kubeconfig {missing} does not exist: check --kubeconfig / $KUBECONFIG"
            )
        raise KubeConfigError(
            f"no kubeconfig: {paths[0]} does not exist and neither --kubeconfig nor $KUBECONFIG "
            "is set; pass --kubeconfig PATH, or --in-cluster inside a pod"
        )
    contexts: list[str] = []
    current = None
    for path in existing:
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise KubeConfigError(f"kubeconfig {path} cannot be read: {error}") from error
        if not isinstance(loaded, dict):
            raise KubeConfigError(f"kubeconfig {path} is not a kubeconfig (YAML mapping)")
        contexts += [
            str(c.get("name")) for c in loaded.get("contexts") or [] if isinstance(c, dict)
        ]
        current = current or loaded.get("current-context")
    where = ", ".join(str(p) for p in existing)
    if context and context not in contexts:
        known = ", ".join(contexts) or "none"
        raise KubeConfigError(
            f"context {context!r} is not in {where} (contexts there: {known}); "
            "see `kubectl config get-contexts`"
        )
    if not context and not current:
        raise KubeConfigError(
            f"{where} has no current-context: pass --context NAME "
            f"(contexts there: {', '.join(contexts) or 'none'})"
        )


def _check_in_cluster() -> None:
    missing = [
        name
        for name in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
        if not os.environ.get(name)
    ]
    if not (IN_CLUSTER_SECRETS / "token").is_file():
        missing.append(str(IN_CLUSTER_SECRETS / "token"))
    if missing:
        raise KubeConfigError(
            f"--in-cluster needs {', '.join(missing)}, which a pod has: run it in a pod with a "
            "ServiceAccount (see charts/kueue-graphql), or use --kubeconfig outside a cluster"
        )


async def build_api_client(
    kubeconfig: str | None, context: str | None, in_cluster: bool, *, pool_size: int = 100
) -> Any:
    """`pool_size`: connections to the API server at once (0: no limit, for the client whose
    requests are long-running watches, so they never hold up reads)."""
    configuration = k8s_client.Configuration()
    configuration.connection_pool_maxsize = pool_size
    try:
        if in_cluster:
            _check_in_cluster()
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            _check_kubeconfig(kubeconfig, context)
            await k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
    except k8s_config.ConfigException as error:
        raise KubeConfigError(f"cannot use the Kubernetes configuration: {error}") from error
    api_client = k8s_client.ApiClient(configuration)
    install_repeated_header_rest_client(api_client)
    assert_no_impersonation_defaults(api_client)
    return api_client
