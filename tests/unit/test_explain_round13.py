"""Classes added in the thirteenth and fourteenth corpus rounds (issue 21): verbs completion
errors outside NCCL, Kubernetes' and systemd-oomd's OOM kills, the Fabric block's health, NCCL's
NVLS bind failure, NVMe over fabrics timeouts and lost paths, md failures of dm-raid arrays
(`mdX`), and torch elastic's rendezvous timeout.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_23.jsonl; the comment names the source). The negative
controls are healthy lines of the same tools, written here, or the records edited as the
comment says.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_23")

CQE = _real("0002")  # uccl-project/uccl#799 (transport retry counter exceeded)
CGROUP_OOM = _real("0006")  # kubernetes/kubernetes#100487 (Warning CgroupOOM pod event)
FABRIC_HEALTH = _real("0007")  # kubernetes-sigs/dra-driver-nvidia-gpu#626 (Summary: Unhealthy)
NVLS = _real("0011")  # pytorch/ci-infra#541 (Failed to bind NVLS multicast memory)
NVME_TCP = _real("0012")  # metal-stack/metal-images#190 (queue timeouts, no usable path)
DM_RAID = _real("0017")  # lvmteam/lvm2#120 (md/raid:mdX: Disk failure on dm-25)
OOMD = _real("0027")  # systemd/systemd#20690 (systemd-oomd kills under memory pressure)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (CQE, Category.NETWORK, "rdma.completion_error"),
        (CGROUP_OOM, Category.HOST_MEMORY, "host.oom_killer"),
        (FABRIC_HEALTH, Category.GPU_HARDWARE, "nvlink.fabric_state"),
        (NVLS, Category.NETWORK, "nccl.nvls_bind_failed"),
        (NVME_TCP, Category.HOST_STORAGE, "storage.nvme"),
        (DM_RAID, Category.HOST_STORAGE, "storage.md_degraded"),
        (OOMD, Category.HOST_MEMORY, "host.oom_killer"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


@pytest.mark.parametrize(
    "text",
    [
        FABRIC_HEALTH.replace("Unhealthy", "Healthy"),  # the same block, healthy
        "    Fabric\n        State : N/A\n        Status : N/A\n        Health\n"
        "            Summary : N/A\n            Bandwidth : N/A\n",  # a GPU without a fabric
        "Health\n    Summary : Unhealthy\n",  # not inside nvidia-smi's Fabric block
        "CQE ERROR wr_id=5 status=5(Work Request Flushed Error) opcode=0",  # a consequence
        "Jun 06 13:36:27 asus kernel: md/raid:mdX: device dm-25 operational as raid disk 0",
        "[Wed Jun 28 13:19:08 2023] nvme nvme4: creating 8 I/O queues.",
        "Sep 10 14:59:49 image systemd[1]: Started systemd-oomd.service - Userspace Out-Of-"
        "Memory (OOM) Killer.",
    ],
)
def test_healthy_lines_of_the_same_tools_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


# the fourteenth round (fresh_24.jsonl): torch elastic's rendezvous timing out, in its
# error handler's JSON (facebookresearch/av_hubert#19); a completed rendezvous stays silent
RENDEZVOUS_TIMEOUT = corpus_text("fresh_24", "0014")
RENDEZVOUS_DONE = corpus_text("fresh_24", "0016")  # meta-pytorch/torchx#492


def test_an_elastic_rendezvous_timeout_is_the_network_a_completed_one_nothing() -> None:
    found = first(RENDEZVOUS_TIMEOUT)
    assert found is not None and found[:2] == (Category.NETWORK, "dist.store_timeout"), found
    assert alarms(RENDEZVOUS_DONE) == []
