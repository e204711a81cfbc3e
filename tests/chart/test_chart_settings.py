"""The chart's container sets only settings the server knows, with values it accepts (issue 20,
item 5): every `--flag=value` it passes and every KUEUE_GRAPHQL_* variable it sets is in the
settings model, and Service link variables (KUEUE_GRAPHQL_PORT=tcp://... from the Service
`kueue-graphql`) are turned off, since the server refuses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kueue_graphql.cli.settings import SERVE, Kind
from tests.chart.conftest import ALL_KNOBS, COMBINATIONS
from tests.chart.test_chart import rendered
from tests.chart.test_chart_knobs import container, one

BY_FLAG = {setting.flag: setting for setting in SERVE}
BY_ENV = {setting.env: setting for setting in SERVE}


@pytest.mark.parametrize("values", COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_the_container_sets_only_known_settings_with_accepted_values(
    helm: Path, values: tuple[str, ...]
) -> None:
    documents = rendered(helm, *values)
    pod = one(documents, "Deployment")["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False
    main = container(documents)
    command, *flags = main["args"]
    assert command == "serve"
    for argument in flags:
        flag, has_value, value = argument.partition("=")
        setting = BY_FLAG[flag]
        if setting.kind is Kind.SWITCH:
            assert not has_value, argument
        else:
            assert has_value, argument
            setting.parse(value, flag)
    for variable in main.get("env") or []:
        setting = BY_ENV[variable["name"]]
        if "value" in variable:
            setting.parse(variable["value"], variable["name"])


def test_the_knobs_set_variables() -> None:
    # The all-knobs values set variables, so the loop above checks some.
    assert "KUEUE_GRAPHQL_" in ALL_KNOBS.read_text()
