"""A subscriber closing its socket mid-send is one DEBUG line, not an ERROR traceback."""

from __future__ import annotations

import logging

import pytest
from starlette.websockets import WebSocketDisconnect
from strawberry.http.exceptions import WebSocketDisconnected
from uvicorn.protocols.utils import ClientDisconnected

from kueue_graphql.http.ws_log import WS_TASK_LOGGER, install_ws_task_log_filter


def _raised(make: type[BaseException] | None = None) -> BaseException:
    """The chain strawberry logs when uvicorn finds the client gone during a send
    (ClientDisconnected -> starlette WebSocketDisconnect -> strawberry WebSocketDisconnected)."""
    try:
        try:
            try:
                raise ClientDisconnected()
            except ClientDisconnected:
                raise WebSocketDisconnect(code=1006) from None
        except WebSocketDisconnect as exc:
            raise WebSocketDisconnected from exc
    except WebSocketDisconnected as error:
        return error


def _send_after_close() -> BaseException:
    try:
        raise RuntimeError('Cannot call "send" once a close message has been sent.')
    except RuntimeError as error:
        return error


def _log(error: BaseException) -> None:
    logging.getLogger(WS_TASK_LOGGER).error(
        "Exception in worker task", exc_info=(type(error), error, error.__traceback__)
    )


@pytest.mark.parametrize("error", [_raised(), _send_after_close()], ids=["disconnect", "closed"])
def test_a_client_gone_mid_send_is_no_error(
    error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    install_ws_task_log_filter()
    with caplog.at_level(logging.INFO):
        _log(error)
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []
    with caplog.at_level(logging.DEBUG, logger=WS_TASK_LOGGER):
        _log(error)
    (record,) = caplog.records
    assert record.levelno == logging.DEBUG
    assert record.exc_info is None
    assert "closed its socket" in record.getMessage()


def test_other_task_errors_keep_their_traceback(caplog: pytest.LogCaptureFixture) -> None:
    install_ws_task_log_filter()
    try:
        raise ValueError("a real bug")
    except ValueError as error:
        with caplog.at_level(logging.INFO):
            _log(error)
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert "Traceback" in caplog.text
