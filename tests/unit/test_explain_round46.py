"""Classes of the forty-sixth round's development misses (fresh_58, fresh_59), each read as a
class: InfiniBand links that went down on both ends or trained narrow, Open MPI's completion
banner wrapped onto a second line, a queue pair the NIC would not create, systemd's mount that
timed out, a task blocked in the NFS client, NFS-Ganesha's failed takeover, verbs' port-error
event."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_58", "0001", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_58", "0013", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_59", "0000", Category.NETWORK, "ib.error_counters"),
        ("fresh_59", "0001", Category.NETWORK, "ib.degraded_link"),
        ("fresh_59", "0003", Category.NETWORK, "rdma.error_completion_dump"),
        ("fresh_59", "0008", Category.NETWORK, "rdma.memlock"),
        ("fresh_59", "0012", Category.HOST_STORAGE, "storage.mount_timeout"),
        ("fresh_59", "0019", Category.HOST_STORAGE, "storage.nfs"),
        ("fresh_59", "0023", Category.NETWORK, "ib.async_port_error"),
        ("fresh_59", "0024", Category.HOST_STORAGE, "storage.nfs"),
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        # a time that falls to a figure: faster; one card by the speaker's choice
        "没错，开始200个step就是很慢，后面会降到4s左右。",
        "我只用一块卡，另一块的利用率为0",
        "One is very high and the other one is low, as expected since I only use one GPU.",
        # links up once (a boot), a link at its maximum width
        "HCA-1:Port 1 Lid 267 - LinkDowned:0 / LinkDowned:0",
        "Switch ibb:Line 7:Port 11: Linkwidth (4X) ok",
        # Ganesha's grace period after a restart, and its informational lines
        "19/06/2023 15:46:16 : epoch 03c5 : host : ganesha.nfsd-1[dbus_heartbeat] nfs_start_grace "
        ":STATE :EVENT :NFS Server Now IN GRACE, duration 30",
        "19/06/2023 15:46:00 : epoch 03c5 : host : ganesha.nfsd-1[main] nfs_start :NFS STARTUP "
        ":WARN :No export entries found in configuration file !!!",
        # systemd mounted the share
        "May 10 15:16:21 host systemd[1]: Mounted /media/672.",
        # a stack of a task waiting in ext4, not NFS
        "[<0>] jbd2_log_wait_commit+0xb7/0x120 [jbd2]",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


def test_a_hung_task_in_the_nfs_client_stays_the_hung_task() -> None:
    text = "\n".join(
        [
            "INFO: task kworker/u258:3:1120 blocked for more than 241 seconds.",
            " [<ffffffffc0a1b2c3>] nfs_set_open_stateid_locked+0xfc/0x370 [nfsv4]",
        ]
    )
    assert alarms(text)[0] == "kernel.hung_task"
