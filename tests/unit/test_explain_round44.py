"""Classes of the forty-fourth round's development misses (fresh_54), each read as a class: a
node's mount that hangs until its timeout, a person's word that the NFS server itself goes down,
and one or two GPUs of a job whose utilisation stays at 0."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, record_read_as


@pytest.mark.parametrize(
    ("number", "category", "rule"),
    [
        ("0008", Category.HOST_STORAGE, "netfs.server_wait"),
        ("0015", Category.HOST_STORAGE, "netfs.server_wait"),
        ("0020", Category.STRAGGLER, "straggler.one_member_idle"),
    ],
)
def test_each_class_of_the_round_is_read(number: str, category: Category, rule: str) -> None:
    assert record_read_as("fresh_54", number) == (category, rule)


@pytest.mark.parametrize(
    "text",
    [
        # the server back up, a server said not to have gone down, a mount that succeeded
        "The NFS server is back up and the hub works again.",
        "Our NFS server did not go down, the client was the problem.",
        "2023-10-25 15:02:46,577 INFO: Waiting for '/opt/apps' to be mounted...",
        # one GPU idle because only one is used
        "I only use one GPU; the other GPUs' util will be 0",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
