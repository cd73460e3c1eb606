"""Device mapper, multipath, md and filesystem faults read from their sources' catalogues
(issue 21, "whole families, not lines").

The lines are built from the kernel's and the tools' format strings (drivers/md/dm-*.c,
multipath-tools, md's raid1.c/raid5.c/md.c, LVM's dmeventd, fs/ext4, fs/jbd2, fs/xfs, fs/btrfs)
with their arguments filled in, nothing else. The negative controls are the start-up, recovery
and notice lines of the same sources.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

FAULTS = [
    # dm-verity, dm-integrity, dm-crypt, dm-snap
    ("device-mapper: verity: 254:0: data block 123456 is corrupted", "storage.device_mapper"),
    ("device-mapper: integrity: dm-3: Checksum failed at sector 0x1a2b", "storage.device_mapper"),
    ("device-mapper: crypt: dm-2: INTEGRITY AEAD ERROR, sector 4096", "storage.device_mapper"),
    (
        "device-mapper: snapshots: Invalidating snapshot: Unable to allocate exception.",
        "storage.device_mapper",
    ),
    # dm-thin and dm-cache
    (
        "device-mapper: thin: 252:3: switching pool to out-of-data-space (queue IO) mode",
        "storage.device_mapper",
    ),
    (
        "device-mapper: thin: 252:3: metadata operation 'dm_pool_commit_metadata' failed: "
        "error = -5",
        "storage.device_mapper",
    ),
    ("device-mapper: thin: 252:3: switching pool to read-only mode", "storage.device_mapper"),
    ("device-mapper: cache: 253:5: switching cache to fail mode", "storage.device_mapper"),
    ("lvm[812]: Failed to extend snapshot vg0/snap1.", "storage.device_mapper"),
    # dm-mpath and multipathd
    (
        "device-mapper: multipath: queue_if_no_path timeout on 253:3, failing queued IO",
        "storage.multipath",
    ),
    ("device-mapper: multipath: 253:3: Failing path 8:32.", "storage.multipath"),
    ("multipathd[757]: mpatha: Entering recovery mode: max_retries=12", "storage.multipath"),
    ("multipathd[757]: mpatha: Disable queueing", "storage.multipath"),
    ("multipathd[757]: checker failed path 8:32 in map mpatha", "storage.multipath"),
    # md and LVM raid
    (
        "md/raid1:md0: sdb1: unrecoverable I/O read error for block 2048",
        "storage.md_degraded",
    ),
    ("md: kicking non-fresh sdc1 from array!", "storage.md_degraded"),
    ("md/raid:md127: cannot start dirty degraded array.", "storage.md_degraded"),
    (
        "dmeventd[501]: WARNING: Device #1 of raid1 array, vg-lv, has failed.",
        "storage.md_degraded",
    ),
    # filesystems
    (
        "EXT4-fs error (device sda1) in ext4_reserve_inode_write:5741: IO failure",
        "host.disk_io",  # an I/O failure: the kernel's generic disk I/O rule reads it first
    ),
    (
        "XFS (sdb1): Log I/O Error (0x2) detected at xlog_ioend_work+0x6e/0x70 "
        "(fs/xfs/xfs_log.c:1263).  Shutting down filesystem.",
        "storage.fs_error",
    ),
    (
        'XFS (sdb1): metadata I/O error in "xfs_buf_ioend+0x1b0/0x3d0" at daddr 0x2 len 1 error 5',
        "host.disk_io",  # an I/O error: the generic disk I/O rule reads it first
    ),
    ("XFS (dm-0): Filesystem has been shut down due to log error (0x2).", "storage.fs_error"),
    (
        "BTRFS error (device sda2): parent transid verify failed on logical 30408704 mirror 1 "
        "wanted 12 found 9",
        "storage.fs_error",
    ),
    ("JBD2: Detected IO errors while flushing file data on sda1-8", "storage.fs_error"),
]

NOTICES = [
    "device-mapper: multipath: 253:3: Reinstating path 8:32.",
    "device-mapper: thin: 252:3: switching pool to write mode",
    "device-mapper: thin: 252:3: reached low water mark for data device: sending event.",
    "device-mapper: cache: 253:5: switching cache to write mode",
    "multipathd[757]: sdd: add path (uevent)",
    "multipathd[757]: mpatha: remaining active paths: 1",
    "multipathd[757]: mpatha: Recovered to normal mode",
    "multipathd[757]: 8:32: reinstated",
    "md: md0: recovery done.",
    "md: data-check of RAID array md0",
    "dmeventd[501]: Monitoring RAID device vg-lv for events.",
    "EXT4-fs (sda1): mounted filesystem 7a0b0f2c-1d2e-4f5a-9b8c-0d1e2f3a4b5c r/w with ordered "
    "data mode. Quota mode: none.",
    "EXT4-fs (sda1): recovery complete",
    "XFS (sdb1): Mounting V5 Filesystem",
    "XFS (sdb1): Ending clean mount",
    "BTRFS info (device sda2): disk space caching is enabled",
]


@pytest.mark.parametrize(("line", "rule"), FAULTS)
def test_each_catalogued_fault_is_a_storage_fault(line: str, rule: str) -> None:
    found = first(line)
    assert found is not None and found[:2] == (Category.HOST_STORAGE, rule), found


@pytest.mark.parametrize("line", NOTICES)
def test_start_up_recovery_and_notice_lines_stay_silent(line: str) -> None:
    assert alarms(line) == [], line
