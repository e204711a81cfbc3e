"""The one shared ApiClient, with a REST layer that can repeat a header.

kubernetes_asyncio keeps request headers in a dict, so a caller in two groups would be
impersonated with only one `Impersonate-Group` header and silently lose the other group's
access. aiohttp accepts a multidict, so the REST layer here expands list-valued headers into one
header line per value.
"""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import rest as k8s_rest
from multidict import CIMultiDict

IMPERSONATE_PREFIX = "impersonate-"


class RepeatedHeaderRESTClient(k8s_rest.RESTClientObject):
    """RESTClientObject that sends list-valued headers as repeated header lines."""

    async def request(  # type: ignore[override]
        self, method: str, url: str, query_params: Any = None, headers: Any = None, **kwargs: Any
    ) -> Any:
        expanded: CIMultiDict[str] = CIMultiDict()
        for name, value in (headers or {}).items():
            if isinstance(value, list | tuple):
                for item in value:
                    expanded.add(name, str(item))
            else:
                expanded.add(name, str(value))
        # The parent only needs `in`, item get/set and del on headers, which CIMultiDict offers.
        return await super().request(
            method,
            url,
            query_params=query_params,
            headers=expanded,  # type: ignore[arg-type]
            **kwargs,
        )


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


async def build_api_client(
    kubeconfig: str | None, context: str | None, in_cluster: bool, *, pool_size: int = 100
) -> Any:
    """`pool_size`: connections to the API server at once (0: no limit, for the client whose
    requests are long-running watches, so they never hold up reads)."""
    configuration = k8s_client.Configuration()
    configuration.connection_pool_maxsize = pool_size
    if in_cluster:
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await k8s_config.load_kube_config(
            config_file=kubeconfig,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    api_client = k8s_client.ApiClient(configuration)
    install_repeated_header_rest_client(api_client)
    assert_no_impersonation_defaults(api_client)
    return api_client
