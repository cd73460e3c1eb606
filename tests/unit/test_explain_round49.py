"""Classes of the forty-ninth round's development misses (fresh_64, fresh_65: system logs and
training output from pastebins, gists and Hugging Face Hub files): PyTorch's c10 fatal signal
handler names the signal that ended the process (`SIGSEGV(11), PID: ..., Thread ...:`)."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [("fresh_65", "0003", Category.APPLICATION, "process.segfault")]
)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("SIGBUS(7), PID: 4242, Thread 4242:", Category.HOST_MEMORY),
        ("SIGABRT(6), PID: 4242, Thread 4250:", Category.UNKNOWN),  # an abort names no cause
    ],
)
def test_the_handler_names_each_signal(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] is category, text


def test_the_handler_s_installation_is_no_crash() -> None:
    assert alarms("c10::FatalSignalHandler::setPrintStackTracesOnFatalSignal(true)") == []
