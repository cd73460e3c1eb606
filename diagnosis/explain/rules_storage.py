"""Storage rules: md RAID, filesystem errors and read-only remounts, SCSI/ATA/NVMe errors, device
mapper and multipath, SMART, NFS and RPC timeouts.

Written from the development part of the corpus: mdadm events (``DegradedArray``,
``DeviceDisappeared``), ``/proc/mdstat`` with a failed member (``[2/1] [_U]``, ``sda1[0](F)``),
``mdadm --detail`` (``State : active, degraded``, ``faulty /dev/sda3``), a degraded hardware
RAID volume; ext4 (``Detected aborted journal``, ``Remounting filesystem read-only``,
``ext4_end_bio ... I/O error``), btrfs (``bdev ... errs: wr N, rd N``, ``bad tree block``,
``open_ctree failed``, ``errno=-5 IO failure``, ``forced readonly``); SCSI
(``critical medium|target error``, ``Sense Key : Medium Error``, ``rejecting I/O to offline
device``); multipathd (``path is down``, ``path offline``, ``failed faulty running``), FC ``LOOP
DOWN``; libata command failures (``error: { UNC }``); smartd failures.

Device mapper, multipath, md and the filesystems' faults were completed from their sources'
catalogues too (dm-mpath, dm-thin, dm-verity, dm-integrity, dm-crypt, dm-snap, dm-cache,
multipath-tools, md's raid1/raid5/md.c, LVM's dmeventd, ext4, jbd2, XFS, btrfs): their start-up,
recovery and notice lines (a path reinstated, a resync done, a clean mount) stay silent.

Two families follow their sources' own message catalogues rather than examples: the Linux NVMe
host driver's fault messages (drivers/nvme/host: timeouts in the 5.x and 6.x formats, aborts,
failed resets, fatal PCIe states, lost queues, ``nvme_log_error``'s failed namespace I/O, lost
multipath paths, NVMe over fabrics and TCP connect, keep-alive and digest failures; its start-up
lines stay silent), and the NFS client's (any RPC program's server not responding, the lock
manager's failed statd monitor calls, the NFSv4 state manager's failed recovery, mount.nfs's
failures, a stale file handle, writeback waits). The disk is a node component (there is no disk
component kind).
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import (
    Rule,
    host_storage,
    rule,
    unless_denied,
    unless_named_only,
    verdict,
)
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

SIMULATED_RULE = "storage.failure_simulated"
MD_INACTIVE = "storage.md_inactive"
MD_CONTAINER = "storage.md_container"
EXPLAINED_BY: dict[str, frozenset[str]] = {
    MD_INACTIVE: frozenset({MD_CONTAINER}),
    "storage.md_degraded": frozenset({SIMULATED_RULE}),
    "storage.md_started_degraded": frozenset({SIMULATED_RULE}),
}
"""An array whose member the speaker failed on purpose (`I simulated the failure of hdd`):
degraded by the test's design; an inactive array beside a firmware-RAID container's line (the
container is inactive by design)."""


def _fewer_members(m: re.Match[str]) -> Verdict | None:
    """Return a degraded array's error when it started with fewer members than it has."""
    if int(m["have"]) >= int(m["want"]):
        return None
    return host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7)


RULES: tuple[Rule, ...] = (
    rule(
        SIMULATED_RULE,
        # a speaker's test that fails a member on purpose (`I simulated the failure of hdd by
        # removing its partition`): first, so that a line that tells it with its mdstat is the
        # test's too
        r"\b(?:I|we)\s+(?:\w+\s+)?simulated\s+(?:the|a|an)\s+(?:(?:disk|drive|member|device)\s+)?"
        r"(?:failure|loss)\s+of\s+(?:/dev/)?(?:[hsv]d[a-z]\d*|nvme\w+|disk|drive|member|a\s+disk)\b"
        r"|\b(?:to\s+)?simulat(?:e|ed|ing)\s+(?:a|an|the)\s+(?:disk|drive|member|device)\s+"
        r"(?:failure|fault|loss)\b",
        ("simulat",),
        "A member failed on purpose, to test the array: its degraded state and rebuild are the "
        "test's, no fault (EXPLAINED_BY); not when the sentence denies it.",
        judge=unless_denied(verdict(C.BENIGN, B.INFRASTRUCTURE, K.NODE, S.INFO, A.NONE, 0.5)),
        flags=re.IGNORECASE,
    ),
    rule(
        "storage.zpool_degraded",
        # zpool status: the pool's state, and a device's row that ZFS faulted (its READ, WRITE
        # and CKSUM counts, then `too many errors`)
        r"^\s*state:\s+(?:DEGRADED|FAULTED|UNAVAIL|SUSPENDED)\s*$"
        r"|^\s*\S+\s+(?:FAULTED|UNAVAIL|REMOVED)\s+\d+\s+\d+\s+\d+\b"
        r"|\bOne or more devices (?:are faulted|has been removed|could not be (?:used|opened))\b"
        # a pool said to be in a bad state (`the local zpool in nyarlathotep was in the DEGRADED
        # state`)
        r"|\bzpool\b[^.\n]{0,40}?\b(?:is|was|went|are|were)\s+(?:in\s+)?(?:the\s+|a\s+)?"
        r"(?:DEGRADED|FAULTED|SUSPENDED|UNAVAIL)\b"
        # the kernel's word of a pool that lost its I/O (suspended, or the node panicked for it)
        r"|\bPool '[^']*' has encountered an uncorrectable I/O failure\b",
        (
            *("state:", "faulted", "unavail", "removed", "one or more devices"),
            *("uncorrectable i/o", "degraded", "suspended"),
        ),
        "A ZFS pool degraded or faulted (zpool status): a disk failed or was removed; the pool "
        "runs on its redundancy (or not at all); replace the device.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.65),
    ),
    rule(
        "storage.md_degraded",
        r"DegradedArray event|DeviceDisappeared event|Fail(?:Spare)? event detected"
        r"|md/raid\d*:md\w+: Disk failure|\[\d+/\d+\] (?:\*\*)?\[U*_[U_]*\]|\b\w+\[\d+\]\(F\)"
        r"|State : [\w, ]*degraded|\bfaulty\s+/dev/|\|\s*Degraded\s*\|"
        r"|\bmd: super_written gets error=|md/raid\d*:md\w+: (?:Cannot continue operation"
        r"|read error not correctable)|^\s*-\s+0\s+0\s+\d+\s+removed\s*$"
        # md's and LVM's own catalogues (raid1.c, raid5.c, md.c, dmeventd_raid.c)
        r"|md/raid\d*:md\w+: (?:\S+: unrecoverable I/O read error|read error NOT corrected"
        r"|Too many read errors|cannot start dirty degraded array)"
        r"|\bmd: kicking non-fresh \S+ from array"
        # older kernels' md prefix, without the array (`raid1: Disk failure on sdb1, ...`)
        r"|\braid\d+: Disk failure on \S+, disabling device"
        r"|WARNING: Device #\d+ of \w+ array, \S+, has failed|Repair of RAID device \S+ failed"
        # a mirror member that failed a read (raid1.c/raid10.c read_balance after an error)
        r"|md/raid\d*:md\w+: \S+: redirecting sector \d+ to another mirror",
        (
            "event",
            "md/raid",
            "[_",
            "_]",
            "] [u",
            "(f)",
            "degraded",
            "faulty",
            "super_written",
            "removed",
            "non-fresh",
            "disk failure",
            "has failed",
            "repair of raid",
        ),
        "A RAID array lost a member (mdadm event, /proc/mdstat, mdadm --detail and its member "
        "table's 'removed' slot, controller): "
        "still running without redundancy; replace the disk.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.75),
    ),
    rule(
        MD_INACTIVE,
        # /proc/mdstat's array that did not start (`md0 : inactive sdf1[4](S) sdh1[1](S)`)
        r"^\s*md\w+\s*:\s*inactive\s+\w+\[\d+\]",
        ("inactive",),
        "An md array that did not start (inactive, its members held as spares): the array and "
        "its filesystem are unavailable until it is assembled; not an Intel RST or DDF "
        "firmware-RAID container, which mdstat always shows inactive (EXPLAINED_BY).",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.6),
    ),
    rule(
        MD_CONTAINER,
        # the firmware RAID's container line under it (`5288 blocks super external:imsm`)
        r"\bblocks super external:(?:imsm|ddf)\s*$",
        ("super external",),
        "A firmware-RAID (Intel RST/IMSM, DDF) container: inactive by design, holding its "
        "members for the arrays inside it.",
        verdict(C.BENIGN, B.INFRASTRUCTURE, K.NODE, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "storage.md_started_degraded",
        r"md/raid\d*:md\w+: (?:raid level \d+ )?(?:active|not clean -- starting background "
        r"reconstruction)?"
        r"\s*with (?P<have>\d+) out of (?P<want>\d+) (?:mirrors|devices)",
        ("out of",),
        "An md array started with fewer members than it has (`active with 1 out of 2 mirrors`): "
        "it runs without redundancy; find the missing disk.",
        judge=_fewer_members,
    ),
    rule(
        "storage.fs_readonly",
        r"Remounting filesystem read-only|\bforced readonly\b|Detected aborted journal"
        r"|Aborting journal on device|Journal has aborted",
        ("read-only", "readonly", "aborted journal", "aborting journal", "journal has aborted"),
        "A filesystem hit an error and went read-only: checkpoints and logs on it now fail.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.8),
    ),
    rule(
        "storage.fs_error",
        r"BTRFS(?: error| critical|: error| warning)? \(device [^)]+\)[: ].*?(?:errs: wr \d+, rd "
        r"\d+|bad tree block|open_ctree failed|IO failure|direct IO failed|csum failed"
        r"|corrupt leaf|tree block corruption)|BTRFS: error \(device"
        r"|EXT4-fs (?:warning|error) \(device [^)]+\):? .*\berror\b"
        r"|EXT4-fs \(\S+\): (?:I/O error while writing superblock|error count since last fsck"
        r"|previous I/O error to superblock detected)"
        r"|EXT4-fs error \(device [^)]+\)(?::| in) "
        r"|BTRFS[^\n]{0,40}parent transid verify failed"
        # XFS (xfs_fsops.c, xfs_log.c, xfs_buf.c): a shutdown, a metadata I/O error, corruption
        r"|XFS \([^)]+\): (?:.*Shutting down filesystem|Filesystem has been shut down"
        r"|metadata I/O error in|Corruption detected|Metadata (?:corruption|CRC error) detected"
        r"|log I/O error|xfs_do_force_shutdown|log mount/recovery failed"
        r"|Failing async write on buffer block|Internal error .{1,60}? at line \d+"
        r"|xfs_\w+: error -?\d+ returned|writeback error on inode)"
        # kernels before 3.x print no device: `XFS: Internal error XFS_WANT_CORRUPTED_RETURN at ...`
        r"|XFS: Internal error (?:XFS|xfs)_\w+ at line \d+"
        # and name the filesystem in quotes (`Filesystem "hda6": Corruption of in-memory data
        # detected.  Shutting down filesystem: hda6`)
        r"|\bFilesystem \"[^\"\n]+\": (?:Corruption of in-memory data detected|I/O Error Detected"
        r"|XFS internal error)"
        r"|JBD2: Detected IO errors while flushing"
        # a journal that cannot be read (ext4's super.c, jbd2's journal.c)
        r"|EXT4-fs \([^)]+\): (?:error loading journal|no journal found|journal superblock"
        r" magic mismatch)|\bJBD2: no valid journal superblock found\b"
        r"|\bJBD2: (?:Invalid checksum recovering|recovery failed)\b",
        ("btrfs", "ext4-fs", "xfs (", "xfs: internal", "jbd2", 'filesystem "'),
        "The filesystem reports I/O errors or corruption on its device (btrfs device stats and "
        "transid failures, ext4 errors, an XFS shutdown or metadata I/O error, jbd2 flush "
        "errors): the disk under it is failing.",
        judge=unless_named_only(host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.75)),
    ),
    rule(
        "storage.scsi_error",
        r"critical (?:medium|target|space allocation|nexus) error, dev|Sense Key : Medium Error"
        # an I/O past the device's end (a filesystem or a partition larger than its device, a
        # device that shrank)
        r"|\battempt to access beyond end of device\b"
        # the block layer's other errors of a request (blk-core.c blk_errors[])
        r"|\b(?:timeout|protection|device resource|device offline|recoverable transport) error,"
        r" dev \w+, sector"
        r"|Unrecovered read error|rejecting I/O to offline device|FAILED Result: hostbyte="
        r"|SMART Failure|LOOP DOWN detected",
        (
            "critical",
            "beyond end of device",
            "error, dev",
            "sense key",
            "unrecovered read",
            "offline device",
            "failed result",
            "smart failure",
            "loop down",
        ),
        "A disk or its path failed I/O (SCSI medium/target error, device offline, SMART "
        "predicted failure, FC loop down).",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.75),
    ),  # fmt: skip
    rule(
        "storage.nvme",
        # the Linux NVMe host driver's fault messages (drivers/nvme/host: pci.c, core.c,
        # multipath.c, fabrics.c, tcp.c), after its `nvme nvme0: ` or `nvme0n1: ` prefix, or
        # the PCI device's (`nvme 0000:00:04.0: `, older kernels' pci.c)
        # (a redacted address too: `nvme <BDF>: `)
        r"(?:\bnvme\d+(?:n\d+)?|\bnvme (?:[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d"
        r"|<[\w-]{1,16}>)):\s+"
        r"(?:I/O (?:tag )?\d+ (?:\([^)]*\) )?(?:type \d+ )?"
        r"(?:opcode 0x[0-9a-f]+ \([^)]*\) )?QID \d+ timeout|Timeout I/O \d+ QID \d+"
        r"|Device not ready; aborting (?:reset|shutdown|initialisation)"
        r"|Removing after probe failure|controller is down|Disabling device after reset failure"
        r"|Abort status: 0x[0-9a-f]+|resetting controller due to|IO queues (?:lost|not created)"
        r"|(?:frozen|failure) state error detected|invalid id \d+ completed on queue"
        r"|Identify (?:Controller|Descriptors|Namespace) failed|Reading (?:CAP|VS|CRTO) failed"
        r"|Could not set queue count"
        r"|Does your device have a faulty power saving mode enabled"
        r"|ANATT timeout|starting error recovery|failed to connect (?:socket|queue)"
        r"|Failed reconnect attempt|receive failed|failed to send request"
        r"|Property (?:Get|Set) error|Connect command failed|(?:header|data) digest error"
        r"|Received C2HTermReq|keep-alive failed|failed nvme_keep_alive_end_io"
        r"|queue \d+: timeout request 0x[0-9a-f]+"
        # NVMe over RDMA (rdma.c) and over Fibre Channel (fc.c, `NVME-FC{0}: `)
        r"|rdma (?:connection establishment|_resolve_addr|_resolve_route|_connect) failed"
        r"|rdma_(?:resolve_addr|resolve_route|connect) failed|tag 0x[0-9a-f]+ on QP \S+ not found"
        r"|\w+ for CQE 0x[0-9a-f]+ failed with status(?! (?:transport retry|RNR retry|local "
        r"protection|remote access|remote operation|work request flushed))|Connect rejected: status"
        r"|Unexpected RDMA CM event|NVME-FC\{\d+(?:\.\d+)?\}: (?:controller connectivity lost"
        r"|transport association (?:error detected|event)|transport error during"
        r"|io timeout: opcode|reset: Reconnect attempt failed|Max reconnect attempts"
        r"|dev_loss_tmo \(\d+\) expired|Couldn't schedule reset|error_recovery: Couldn't"
        r"|failed to init ctrl state)"
        # a namespace I/O the drive failed (nvme_log_error), with its NVMe status
        r"|[\w/ ]{1,30}\(0x[0-9a-f]+\) @ LBA \d+, \d+ blocks, [^(\n]+"
        r"\(sct 0x[0-9a-f]+ / sc 0x[0-9a-f]+\))"
        r"|\bno (?:usable|available) path - (?:requeuing|failing) I/O"
        # nvme-cli's error-log entry: the command's status, a media or transfer failure
        r"|^\s*status_field\s*:\s*0x[0-9a-fA-F]+\((?:Unrecovered Read Error|Write Fault"
        r"|Data Transfer Error|Internal Error|Command Abort|Compare Failure|Access Denied"
        r"|End-to-end \w+ Check Error|Deallocated or Unwritten Logical Block)"
        # the controller's status register, printed only when it failed (`CSTS=0xffffffff`)
        r"|(?i:\bnvme)[^\n]{0,80}?\bCSTS=0x[0-9a-fA-F]+"
        r"|nvme\d+n\d+: detected capacity change from \d+ to 0\b"
        # (SPDK's; a completion error on its RDMA queue pair is the fabric's: rules_rdma's
        # EXPLAINED_BY clears this finding then)
        r"|\bnvme_\w+\.c:\s*\d+:\w+: \*ERROR\*"
        # a local NVMe disk that never appeared (systemd's device unit timed out)
        r"|\bdev-nvme\w*\.device: Job dev-nvme\w*\.device/start failed with result 'timeout'"
        r"|\bTimed out waiting for device (?:/dev/|dev-)nvme"
        # the PCI device's own lines (`nvme 0000:01:00.0: Failed status: ffffffff, reset
        # controller`, `Device failed to resume`): the drive fell off its link
        r"|\bnvme \S+: (?:Failed status: 0?x?[0-9a-f]+, reset "
        r"controller"
        r"|Device failed to resume|Refused to change power state)",
        ("nvme", "status_field"),
        "An NVMe drive timed out or failed I/O, failed its reset or vanished (capacity 0, "
        "queues lost), reported a fatal PCIe state, or an NVMe over fabrics target (TCP, RDMA, "
        "Fibre Channel) stopped answering (queue timeouts, failed keep-alive, connect or "
        "reconnect, lost connectivity, no usable path): "
        "local checkpoints, caches and datasets on it fail.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.75),
    ),
    rule(
        "storage.smart_failed",
        # smartctl's NVMe health (smartmontools nvmeprint.cpp) and nvme-cli's smart-log: the
        # drive says it is failing (critical warning bits, media errors)
        r"SMART overall-health self-assessment test result: FAILED"
        r"|^\s*- (?:available spare has fallen below threshold|NVM subsystem reliability has "
        r"been degraded|media has been placed in read only mode|volatile memory backup device "
        r"has failed|persistent memory region has become read-only)"
        r"|^\s*Critical Warning:\s+0x(?!00\b)[0-9a-f]{2}\b"
        r"|^\s*Media and Data Integrity Errors:\s+[1-9]"
        r"|^\s*critical_warning\s*:\s*(?:0x)?[1-9a-f]|^\s*media_errors\s*:\s*[1-9]"
        r"|\"(?:critical_warning|media_errors)\"\s*:\s*[1-9]"
        # smartctl --json's smart_status.nvme bits (`"volatile_memory_backup_failed": true`)
        r"|\"(?:spare_below_threshold|reliability_degraded|media_read_only"
        r"|volatile_memory_backup_failed|persistent_memory_region_unreliable)\"\s*:\s*true\b",
        (
            *("smart", "- ", "critical warning", "media and data", "critical_warning"),
            *("media_errors", "spare_below", "reliability_degraded", "media_read_only"),
            *("volatile_memory_backup", "persistent_memory_region"),
        ),
        "The drive's own health log says it is failing (smartctl's verdict FAILED, an NVMe "
        "critical warning: spare below threshold, reliability degraded, read-only media, a "
        "failed backup device; media and data integrity errors): replace it before the "
        "checkpoints on it are lost.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "storage.bmc_drive",
        # a BMC's system event log (ipmitool sel list): a drive slot's fault, asserted
        r"\|\s*Drive Slot(?: / Bay)?(?: #0x[0-9a-f]{2})?[^|\n]{0,40}\|\s*"
        r"(?:Drive Fault|In Failed Array|Rebuild Aborted|Predictive Failure|In Critical Array)"
        r"\s*\|\s*Asserted\b",
        ("drive slot",),
        "The node's BMC logged a drive fault (ipmitool's SEL: a drive fault, a failed or "
        "critical array, an aborted rebuild, a predicted failure): replace the drive.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "storage.ata",
        r"\bata\d+(?:\.\d+)?: (?:error: \{[^}]*\b(?:UNC|IDNF|AMNF|ICRC)\b"
        r"|failed command: (?:READ|WRITE)|exception Emask 0x[0-9a-f]+ [^\n]*\bfrozen\b)",
        ("ata",),
        "A SATA disk failed a command (libata: an uncorrectable read, a missing sector, an "
        "interface CRC error, a frozen port): the disk or its cable is failing.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "storage.scsi_reset",
        r"\bsd \d+:\d+:\d+:\d+: (?:\[\w+\] )?(?:Power-on or device reset occurred"
        r"|Device offlined - not ready after error recovery)",
        ("power-on or device reset", "device offlined"),
        "A SCSI disk was reset (sense 'Power-on or device reset occurred', a UNIT ATTENTION after "
        "an error-handler reset or a dropped link) or offlined by the error handler: the disk "
        "or its link is flapping.",
        host_storage(S.WARNING, A.HARDWARE_INSPECTION, 0.55),
    ),
    rule(
        "storage.device_mapper",
        # device-mapper targets' fault messages (drivers/md/dm-*.c, after `device-mapper:
        # <target>: `): data that fails its check, and thin, cache or snapshot volumes that
        # can no longer write
        r"device-mapper: verity: [^\n]*\bblock \d+ is corrupted|device-mapper: verity: \S+: "
        r"reached maximum errors|device-mapper: integrity: [^\n]*Checksum failed at sector"
        r"|device-mapper: crypt: [^\n]*INTEGRITY AEAD ERROR"
        r"|device-mapper: snapshots: Invalidating snapshot"
        r"|device-mapper: (?:thin|cache): (?:\S+: )?(?:switching (?:pool|cache) to "
        r"(?:out-of-data-space|read-only|fail)\b|metadata operation '[^']+' failed"
        r"|failed to abort metadata transaction|unable to switch (?:pool|cache) to write mode"
        r"|unable to read needs_check flag|No free metadata blocks|Could not get free metadata"
        r"|(?:alloc_data_block|dm_thin_find_block)\(\) failed)"
        r"|Failed to extend snapshot \S+",
        ("device-mapper", "failed to extend snapshot"),
        "A device-mapper volume reports a fault (read from drivers/md/dm-*.c): a verity, "
        "integrity or dm-crypt block that fails its check (corruption below it), an "
        "invalidated snapshot, a thin pool or cache out of space or its metadata failing "
        "(read-only or failing I/O). The volume's readers and writers fail; inspect the disk "
        "under it, or extend the pool.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "storage.multipath",
        r"multipathd(?:\[\d+\])?: .*(?:path is down|path offline|failing path"
        r"|remaining active paths: 0)|\bfailed faulty running\b"
        # multipath -ll's older listing of a path's states (`sdab 65:176 [failed][ready]`)
        r"|\b\d+:\d+\s+\[failed\]\[(?:ready|ghost|faulty)\]"
        r"|device-mapper: multipath: (?:\S+: )?Failing path"
        # multipath-tools' and dm-mpath's own catalogues: all paths down and I/O failed, a
        # failover that failed, a path the checker cannot use
        r"|device-mapper: multipath: (?:queue_if_no_path timeout on \S+, failing queued IO"
        r"|Could not failover)"
        r"|multipathd(?:\[\d+\])?: [^\n]*(?:Entering recovery mode|Disable queueing"
        r"|reinstate failed|unusable path \([^)]*\) - checker failed|checker failed path"
        r"|: mark as failed"
        # a new path the daemon could not add to its map (`failed in domap for addition of new
        # path sda`)
        r"|failed in domap for addition of new path"
        r"|Could not synchronize with kernel state|checker has no usable fd)",
        ("multipath", "failed faulty", "[failed]["),
        "A path to a SAN/iSCSI volume failed (multipath: the kernel failed a path or its "
        "failover, multipathd's checker marked it down or failed, all paths are down and "
        "queueing stopped): I/O stalls or fails over; all paths down makes the filesystem "
        "read-only.",
        host_storage(S.ERROR, A.CHECK_NETWORK, 0.7),
    ),
    rule(
        "storage.mount_timeout",
        # systemd's mount unit whose mount command did not return (src/core/mount.c)
        r"\b\S+\.mount: Mounting timed out\b|\b\S+\.mount: Failed with result 'timeout'",
        ("mounting timed out", "result 'timeout'"),
        "systemd gave up on a mount that did not return in time: the filesystem's server (NFS, "
        "a network share) or the device behind it does not answer; whatever needs the path "
        "fails or waits.",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.5),
    ),
    rule(
        "storage.io_error",
        # (not a floppy drive's, `dev fd0`: a VM's empty virtual drive probed at boot)
        r"\bI/O error,? dev (?!fd\d)\S+, sector|Buffer I/O error on dev(?:ice)? (?!fd\d)"
        r"|\bI/O error -?\d+ writing to inode"
        r"|blk_update_request: \w+ error(?!, dev fd\d)"
        r"|\bloop\d*: (?:Write|Read) error at byte offset",
        ("i/o error", "blk_update_request", "error at byte offset"),
        "A block device failed an I/O (any other kernel spelling).",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "storage.slow_fsync",
        # etcd's write-ahead log and backend, which wait for fdatasync on every commit (`wal:
        # sync duration of 1.134771573s, expected less than 1s`, `slow fdatasync`)
        r"\bwal: sync duration of [\d.]+m?s, expected less than \d+m?s"
        r"|\bslow fdatasync\b",
        ("sync duration", "slow fdatasync"),
        "A disk too slow to sync its writes in time (etcd's write-ahead log): the disk is "
        "overloaded or failing, and the Kubernetes control plane above it slows or loses its "
        "leader.",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.5),
    ),
    rule(
        "storage.nfs",
        # (not with its `OK` on the same line: a question quoting a hiccup that ended)
        r"nfs: server (?P<srv>\S+) not responding(?![^\n]*\bnfs: server (?P=srv) OK\b)"
        r"|lockd: server \S+ not responding"
        # the colon after the server's name, as macOS's kernel and redacted pastes print it
        r"|\bnfs server \S+: not\s+responding\b"
        r"|RPC:\s+\d+ call_timeout|\bnfs_file_fsync\b|\bnfs4?_\w*wait\w*\+0x"
        r"|\bSM_(?:UN)?MON\b[^\n]{0,40}?\bfail\w*|\blockd:\s+cannot\s+monitor\b"
        # any RPC program's server not answering (nfs, lockd, statd, rpcbind, nfsacl), the
        # NFSv4 state manager's failed recovery, mount.nfs's failures, a stale handle
        r"|\b(?:statd|rpcbind|nfsacl|nfs4): server \S+ not responding"
        r"|NFS: state manager[^\n]{0,40} failed on NFSv4 server"
        r"|nfs_create_rpc_client: cannot create"
        r"|mount\.nfs4?: (?:Connection timed out|Connection refused|No route to host"
        r"|Resource temporarily unavailable"
        r"|access denied by server|mount system call failed|Stale (?:NFS )?file handle"
        r"|rpc\.statd is not running but is required for remote locking)"
        r"|mount to NFS server '[^']*' failed: (?:timed out|RPC Error|System Error)"
        # a Lustre client's mount that failed on the servers' side or the network's (not `No
        # such device`: netfs.client_missing, the node's own kernel)
        r"|\bmount\.lustre: mount \S+ at \S+ failed: (?:Device or resource busy|Input/output "
        r"error|Connection timed out|Cannot send after transport endpoint shutdown|No route to host"
        r"|Network is unreachable|Operation already in progress)"
        # a network or parallel filesystem's client service that failed (systemd's words), or
        # its mount helper's failed mount(2)
        r"|\b(?:beegfs-client|beegfs-helperd|lustre[\w-]*|glusterd|gpfs|mmfs[\w-]*|weka[\w-]*"
        r"|nfs-client|nfs-server|nfs-mountd|rpc-statd|autofs|rpcbind)\.service: "
        r"Failed with result '(?!success)"
        r"|\bFailed to start (?:beegfs-client|lustre[\w-]*|nfs-server|nfs-mountd|rpc-statd|autofs)"
        r"\.service\b"
        r"|\bbeegfs-client\[\d+\]: mount: \S+: mount\(2\) system call failed\b"
        # autofs's NFS mount that failed, the server's mountd refusing a client
        r"|mount\(nfs\): nfs: mount failure \S+ on \S+|rpc\.mountd\[\d+\]: refused mount request"
        # the automounter's request that timed out or failed in the kernel (fs/autofs), and
        # rpcinfo finding no NFS program (100003) on the server
        r"|\bautofs\w*: request (?:\d+ )?for \S+ "
        r"(?:timed out after \d+ seconds|completed with error)"
        r"|\bprogram 100003 version \d+ is not available\b"
        r"|\b[Ss]tale NFS file handles?\b"
        r"|\bstatd\b[^\n]{0,40}?\b(?:timed\s+out|not\s+responding|failed\s+to\s+contact)"
        # the NFSv4 client's state recovery that failed (fs/nfs/nfs4state.c, fs/lockd): locks or
        # opens not reclaimed, a client id taken, a server that changed a file under us
        r"|\blockd: failed to reclaim lock\b|\bNFS: _*nfs4_\w+: (?:Lock reclaim failed|unhandled "
        r"error -(?!512\b))|NFS: nfs4_discover_server_trunking unhandled error -(?!512\b)"
        r"|\bNFS: Server \S+ reports our "
        r"clientid is in use|\bNFS: migration recovery failed"
        r"|\bNFS: server \S+ error: fileid changed"
        r"|\bNFS: Server wrote zero bytes"
        r"|\bNFS: v4 server (?:\S+\s+)?returned a bad sequence-id error"
        r"|\bRPC: Could not send backchannel reply"
        # the kernel NFS server that cannot start (`rpc.nfsd: unable to set any sockets for
        # nfsd`, `writing fd to kernel failed`)
        r"|\brpc\.nfsd: (?:unable to set any sockets for nfsd|writing fd to kernel failed)"
        # NFS-Ganesha's server that turns its backend's EIO into NFS4ERR_IO, or calls itself
        # unhealthy (its request queue no longer drains)
        r"|\bconverted to NFS4ERR_IO\b|\bnfs_health :\w+ :\w+ :Health status is unhealthy"
        # Ganesha's own severities for a failure (`:CRIT :`, `:MAJ :`, `:FATAL :`), and a
        # recovery that could not take over the clients' state (rados_kv, rados_cluster)
        r"|\bganesha\.nfsd-\d+\[[^\]\n]+\] \w+ :[\w ]+ :(?:FATAL|CRIT|MAJ) :"
        r"|\bganesha\.nfsd-\d+\[[^\]\n]+\] \w+ :[\w ]+ :\w+ :Failed to takeover\b"
        # a task blocked inside the NFS client, as /proc/<pid>/stack lists it (its addresses
        # hidden: `[<0>]`; a hung-task report's trace is read as the hung task)
        r"|^\s*\[<0>\] \w+(?:\.\w+)*\+0x[0-9a-f]+/0x[0-9a-f]+ \[(?:nfsv[34]|nfs|sunrpc|lockd)\]",
        (
            *("not responding", "rpc:", "nfs_file_fsync", "nfs", "sm_mon", "sm_unmon"),
            *("cannot monitor", "mount.nfs", "lockd: failed", "backchannel", "mount(nfs)"),
            *("refused mount request", "nfs4err_io", "health status is unhealthy", "autofs"),
            *("program 100003", "ganesha", "[nfs", "[sunrpc]", "[lockd]"),
            *(".service: failed with result", "failed to start", "mount(2)", "mount.lustre"),
        ),
        "The NFS server (or the RPC below it) stopped answering, the lock manager cannot reach "
        "statd to monitor a client (``SM_MON failed``, ``lockd: cannot monitor``), or a task "
        "waits in NFS writeback, or a network filesystem's client failed to mount (BeeGFS, "
        "Lustre, GPFS): every rank reading, locking or checkpointing through it stalls.",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.7),
    ),
    rule(
        "storage.thin_pool_full",
        # docker's devicemapper storage driver (daemon/graphdriver/devmapper)
        r"\bThin Pool has \d+ free data blocks which is less than minimum required \d+ free data "
        r"blocks\b",
        ("thin pool has",),
        "Docker's devicemapper thin pool is almost full: image pulls and container writes fail "
        "until space is freed.",
        host_storage(S.ERROR, A.FREE_DISK, 0.7),
    ),
    rule(
        "netfs.client_missing",
        # the kernel has no such filesystem: mount.lustre's `failed: No such device` (with its
        # own `Are the lustre modules loaded?`), mount(8)'s `unknown filesystem type`
        r"\bmount\.lustre: mount \S+ at \S+ failed: No such device\b|\bAre the lustre modules "
        r"loaded\?"
        r"|\bunknown filesystem type '(?:lustre|nfs4?|cifs|smb3|ceph|beegfs|gpfs|fuse\.\w+)'"
        # mount(8) on a server's export without the helper that mounts it (`bad superblock on
        # 10.0.0.5:/export, missing codepage or helper program`): nfs-utils not installed
        r"|\bwrong fs type, bad option, bad superblock on [\w.-]+:/\S*, missing codepage or "
        r"helper program\b"
        # the BeeGFS client module refusing its own configuration file at mount
        r"|\bbeegfs: mount\(\d+\): (?:The config argument '[^']+' is invalid|Configuration "
        r"error:)",
        (
            *("no such device", "lustre modules", "unknown filesystem type", "bad superblock on"),
            "beegfs: mount",
        ),
        "The node's kernel has no client for the filesystem (mount.lustre's `No such device`, "
        "`unknown filesystem type 'lustre'`): its module is not installed for this kernel or "
        "not loaded, typically after a kernel update; or the client rejects its own "
        "configuration (BeeGFS's `The config argument ... is invalid`); the node's setup, not "
        "the storage.",
        verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
)
