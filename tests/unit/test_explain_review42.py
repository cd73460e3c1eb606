"""Review 42: a review of session 32's classes (a helper that read `git diff f8810c7..ccc39de`
and tried texts of its own, not the corpus, 2026-12-07): each text below read wrongly or raised
an alarm before its mend. Misreads: bug reports narrated in the future tense taken for a
document's example, a guide's symptom heading inside a report, a speaker's own stop taken for a
supposition, an Xid on a named node taken for a general statement, a regression against the
non-distributed baseline, kubectl's padded exit code, nearby formats of the new classes. False
alarms: runbook conditions read as the speaker's own event, a firmware-RAID container, disks
filled by accident or denied, failures simulated of another kind or denied, general or
conditional sentences of the new cloud, filesystem, NVML, RDMA, PSU and Chinese-figure
classes."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, silence_tests

_XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."

test_the_review_variants_are_read = read_as_tests(
    [
        (
            "After about 2 hours of training the job will produce an error like this:\n"
            "RuntimeError: "
            "CUDA error: an illegal memory access was encountered",
            Category.GPU_APPLICATION,
        ),
        (
            "Running the script on 8 GPUs will print an error message like:\n"
            "torch.cuda.OutOfMemoryError: "
            "CUDA out of memory. Tried to allocate 2.00 GiB",
            Category.GPU_OOM,
        ),
        (
            "Whenever the driver loads it logs an error message:\nJan  1 10:00:00 host kernel: "
            + _XID,
            Category.GPU_HARDWARE,
        ),
        (
            "Checking the symptoms on gpu-07 after the crash, dmesg shows:\nJan  1 10:00:00 "
            "gpu-07 kernel: " + _XID,
            Category.GPU_HARDWARE,
        ),
        (
            "Here is what happens when I launch on 2 nodes: the training hangs at step 0 forever.",
            Category.HANG,
        ),
        (
            "I suppose it is a bug, but the training hangs at epoch 3 for 2 hours with no output.",
            Category.HANG,
        ),
        (
            "Imagine my surprise: the training froze at step 1200 and has been stuck for 3 hours.",
            Category.HANG,
        ),
        (
            "Xid 94 occurred on node 5; this is usually a contained ECC error.",
            Category.GPU_HARDWARE,
        ),
        (
            "node gpu-12 often reports Xid 79 under load",
            Category.GPU_HARDWARE,
        ),
        (
            "The training became 3x slower than the non-distributed baseline after we upgraded "
            "NCCL last week.",
            Category.STRAGGLER,
        ),
        (
            "      Exit Code:    137",
            Category.HOST_MEMORY,
        ),
        (
            'On gpu-3 all others had port state "DOWN"',
            Category.NETWORK,
        ),
        (
            "ResourceExhaustedError: OOM when allocating tensor with shape[32,512,512] and "
            "type float",
            Category.GPU_OOM,
        ),
        (
            "W tensorflow/core/common_runtime/bfc_allocator.cc:419] Allocator (GPU_0_bfc) "
            "ran out of memory trying to allocate 1.00GiB (rounded to 1073741824). Current "
            "allocation summary follows.",
            Category.GPU_OOM,
        ),
        (
            'I0101 kubelet[1]: "Eviction manager: attempting to reclaim" '
            'resourceName="ephemeral-storage"',
            Category.HOST_STORAGE,
        ),
        (
            "Fan3B            | 0.000      | RPM        | cr    | na        | 600.000   |",
            Category.HOST_HARDWARE,
        ),
        (
            "FAN 1            | 41h | cr  | 29.1 | 0 RPM",
            Category.HOST_HARDWARE,
        ),
        (
            "nvmlDeviceGetFanSpeed failed: error code 999",
            Category.GPU_HARDWARE,
        ),
        (
            "nvidia_fs: Unknown symbol nvidia_p2p_get_pages (err -2)",
            Category.APPLICATION,
        ),
        (
            "modprobe: ERROR: could not insert 'nvidia': Unknown symbol in module, or unknown "
            "parameter (see dmesg)",
            Category.APPLICATION,
        ),
        (
            "The dataloader kept writing until it filled up the disk.\nOSError: [Errno 28] "
            "No space left on device",
            Category.HOST_STORAGE,
        ),
        (
            "We are not intentionally filling the disk, but we get: OSError: [Errno 28] No "
            "space left on device",
            Category.HOST_STORAGE,
        ),
        (
            "Someone deliberately filled /scratch on node 4? We now get\nOSError: [Errno "
            "28] No space left on device",
            Category.HOST_STORAGE,
        ),
        (
            "We never simulated a disk failure, yet md0 is degraded:\nmd/raid1:md0: Disk "
            "failure on sdb1, disabling device.",
            Category.HOST_STORAGE,
        ),
        (
            "md/raid1:md0: Disk failure on sdb1, disabling device.\nWe simulated a power "
            "failure on the rack yesterday.",
            Category.HOST_STORAGE,
        ),
        (
            "PSU2 failed this morning on gpu-a03.",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_the_review_look_alikes_stay_silent = silence_tests(
    [
        (
            "Personalities : [raid1]\nmd126 : active raid1 sda[1] sdb[0]\n      976759808 "
            "blocks super external:/md127/0 [2/2] [UU]\n\nmd127 : inactive sdb[1](S) sda[0](S)\n"
            "      5288 blocks super external:imsm"
        ),
        ("Runbook: if dmesg shows '" + _XID + "' and we see it twice, drain the node."),
        (
            "If nvidia-smi prints 'Unable to determine the device handle for GPU 0000:3b:00.0: "
            "Unknown Error' whenever I get a new node, reseat the GPU."
        ),
        (
            "To avoid downtime from underlying hardware degradation, AWS recommends using "
            "Auto Scaling groups."
        ),
        (
            "Our monitoring detects host hardware degradation early and drains the node before "
            "it fails."
        ),
        ("If the client could not mount cephfs, check the keyring."),
        (
            "Could not mount lustre filesystem on compute nodes; see the Lustre manual chapter "
            "13 for troubleshooting."
        ),
        ("NVML error code 999 (NVML_ERROR_UNKNOWN) means an internal driver error occurred."),
        ("Unknown Error (999) is returned by the API when the context is lost"),
        ("An HCA that dies mid-job shows up as error 12 in NCCL."),
        ("IB devices are missing inside the container unless you pass --device=/dev/infiniband"),
        ("batch size 32时每步0.7s，batch size 64时每步1.4s，详细日志放在后面"),
        ("The PSU_Fan failed the self-test earlier but is fine now"),
    ]
)
