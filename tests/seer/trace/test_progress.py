"""seer.trace.progress: a step counter on stderr, shown only on a terminal."""

from __future__ import annotations

import io
import sys

from seer.trace.progress import steps


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_names_each_step_on_a_terminal(monkeypatch):
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    with steps(2, "seer.trace summary") as stage:
        stage("read")
        stage("predict")
    text = err.getvalue()
    assert "seer.trace summary" in text and "read" in text and "1/2, predict" in text


def test_no_bar_off_a_terminal_or_when_asked(monkeypatch):
    for err, enabled in ((io.StringIO(), True), (_Terminal(), False)):
        monkeypatch.setattr(sys, "stderr", err)
        with steps(1, "x", enabled) as stage:
            stage("read")
        assert err.getvalue() == ""
