"""A reviewer's breakers built from the producers' own format strings
(tests/fixtures/explain_review/review38.json, 2026-12-06): 68 excerpts, 24 healthy look-alikes,
each made from a format read in the Linux kernel (sunrpc, nfs, nfsd, lockd, mlx5, ipoib, pci,
aer, nvme), rdma-core, UCX, libfabric, NVIDIA's open kernel modules, DCGM and NVML. Read 63/68
before any change: the rules missed an uncorrectable AER reported by a device bound to the
nvidia driver (a GPU's, `host.pcie_gpu_uncorrectable`) and a narrow link whose device the
kernel's own enumeration line names a GPU (`pci 0000:9a:00.0: [10de:2330] type 00 class
0x030200`, read as lspci's device header is). 65/68 after. Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review38")
_LIMITS_BY_REASON = {
    "nfsd's client-recovery tracking that failed to start: the corpus's labels disagree (a "
    "fault on one, healthy on others), so no rule reads it": ("r38-009",),
    "a ConnectX register read the firmware refuses (`ACCESS_REG(0x805) ... status bad "
    "operation`), noise by gpud's account: an evaluation record files the same line a network "
    "fault, so the rule keeps reading it": ("r38-029",),
    "DCGM's NVLink CRC errors past a threshold: filed gpu.hardware with the corpus, the "
    "reviewer files rising counters gpu.degraded": ("r38-062",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
