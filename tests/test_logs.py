"""The CLI's logging setup touches the lab's loggers only: a notebook's handlers stay."""

from __future__ import annotations

import io
import logging

import pytest

from pipelines import logs


@pytest.fixture
def clean_loggers():
    """The root and package loggers as a test found them, restored after it."""
    root = logging.getLogger()
    saved_root = root.handlers[:], root.level
    saved = {name: (logging.getLogger(name).handlers[:], logging.getLogger(name).level) for name in logs.PACKAGES}
    yield root
    root.handlers[:] = saved_root[0]
    root.setLevel(saved_root[1])
    for name, (handlers, level) in saved.items():
        logging.getLogger(name).handlers[:] = handlers
        logging.getLogger(name).setLevel(level)


def test_a_notebooks_root_handler_survives_and_hears_the_lab(clean_loggers):
    notebook = logging.StreamHandler(io.StringIO())
    clean_loggers.handlers[:] = [notebook]
    logs.configure(0)
    assert clean_loggers.handlers == [notebook]  # not replaced
    logging.getLogger("pipelines.design").info("round 3 committed")
    assert "round 3 committed" in notebook.stream.getvalue()
    assert not any(logging.getLogger(name).handlers for name in logs.PACKAGES)  # no second copy on stderr


def test_a_bare_process_gets_the_labs_stderr_lines(clean_loggers, capsys):
    clean_loggers.handlers[:] = []
    logs.configure(-1)  # -q: warnings and errors only
    logging.getLogger("overlay.design").info("hidden")
    logging.getLogger("routing.compiled").warning("shown")
    logs.configure(-1)  # configuring twice keeps one handler
    logging.getLogger("pipelines").warning("once")
    err = capsys.readouterr().err
    assert "hidden" not in err and "WARNING routing.compiled: shown" in err and err.count("once") == 1
    assert clean_loggers.handlers == []
