"""Network and parallel filesystems seen from a compute node: Lustre and LNet, Spectrum Scale
(GPFS), BeeGFS, CephFS and libceph, FUSE mounts (s3fs, gcsfuse, blobfuse).

Read from the producers' sources (catalogued in the session notes of 2026-12-05: lustre-release's
LCONSOLE messages and their ids, ptlrpc's and ldlm's request and lock timeouts, LNet's o2ib and
socket drivers; BeeGFS' messaging; the kernel's ceph and libceph; errno 107 of a dead FUSE
daemon) and, for GPFS, from IBM's message documentation:

- the client lost its data (``This client was evicted by``, ``evicting client``, ``dirty page
  discard ... may get corrupted``, CephFS' ``reconnect denied``/``rejected``, a GPFS node
  expelled or its file system unmounted by the system, a disk failure, BeeGFS failing on all
  routes, a FUSE mount whose daemon died: ``Transport endpoint is not connected`` on a path):
  host storage, error;
- the client waits for the server (Lustre's ``Connection to ... was lost``, a request timed out
  for a slow reply, a lock timed out entering recovery, CephFS' stale caps or hung MDS, BeeGFS'
  retries, a GPFS lease overdue, any other ``LustreError:``): host storage, warning: the client
  recovers by itself unless it repeats; a line in the same input that says it recovered
  (``Connection restored to``, ``reconnect success``, ``caps renewed``, ``session
  established``) after it makes a wait said once benign (``RECOVERED_BY``; the line of recovery
  gives no finding of its own); waits that repeat are a flapping server, a fault even when
  each recovered; a recovery logged before the wait does not end it;
- LNet's own transport errors (``Timed out RDMA with``, ``Timed out tx``, ``Closing conn``, a
  request failed ``due to network error``): the network between the node and its servers;
- the Ceph cluster's own health report (its monitor's ``HEALTH_WARN``/``HEALTH_ERR`` with
  placement groups stale, down or degraded, OSDs down, requests blocked; a health check's
  slow ops or slow requests, counted above zero): host storage, warning: every client's I/O
  waits on the cluster.

Guarantees: anchored on each producer's prefix or message id, so prose that mentions Lustre is
not read; the caller's own Lustre errors (``rc = -2``, a quota) are the job's; libceph's
routine ``session lost, hunting for new mon`` and mount messages stay silent;
errno 107 from a socket (no path) is not read as storage.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, host_storage, rule, sentence_bounds, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


SHARED_FS = r"(?:Lustre|GPFS|BeeGFS|CephFS|NFS|WekaFS|JuiceFS)"
"""The shared filesystems people name in prose (the said-rules' vocabulary)."""

_PLANNED = re.compile(
    r"\b(?:planned|maintenance\s+window|scheduled\s+maintenance|all\s+clear|as\s+expected)\b",
    re.IGNORECASE,
)


def _lost_unless_planned(m: re.Match[str]) -> Verdict | None:
    """The client lost its server's state, unless the same line says it was planned (a person's
    note of a maintenance window: `forced to unmount during the planned maintenance`)."""
    if _PLANNED.search(m.string):
        return None
    return host_storage(S.ERROR, A.ISOLATE_NODE, 0.75)


_A_CONDITION = re.compile(r"\b(?:if|when|whenever|unless)\b", re.IGNORECASE)


def _unless_a_condition(m: re.Match[str]) -> Verdict | None:
    """A client that failed, unless its sentence puts it as a condition (`If the client could
    not mount cephfs, check the keyring`)."""
    if _A_CONDITION.search(m.string, sentence_bounds(m)[0], m.start()):
        return None
    return host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.5)


def _caller_error(m: re.Match[str]) -> Verdict:
    """Return the application's warning for a quota exceeded, else a benign note."""
    if m["quota"]:
        return verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.WARNING, A.FREE_DISK, 0.5)
    return verdict(C.BENIGN, B.APPLICATION, K.JOB, S.INFO, A.NONE, 0.4)


RULES: tuple[Rule, ...] = (
    rule(
        "netfs.client_failed",
        # a cache or FUSE filesystem's client whose reads from its workers time out (Alluxio:
        # `Failed to read block 234881025 from worker ..., will retry: Timeout waiting for
        # response after 30000ms`)
        r"\bFailed to (?:read|close input stream for) block \d+\b[^\n]*\bTimeout waiting for "
        r"response after \d+\s*ms\b"
        # a network filesystem's CSI mount that failed (`Could not mount juicefs: ...`)
        r"|\bCould not mount (?:juicefs|lustre|cephfs|beegfs|weka|alluxio|gpfs):",
        ("timeout waiting for response", "could not mount"),
        "A network or cache filesystem's client cannot read from its servers in time, or its "
        "mount fails: every rank reading through it stalls or cannot start.",
        judge=_unless_a_condition,
        flags=re.IGNORECASE,
    ),
    rule(
        "netfs.ceph_unhealthy",
        # the monitor's summary (`HEALTH_WARN; 70 pgs degraded; 70 pgs stale; ...; 26 requests
        # are blocked > 32 sec`), a health check's update (`3 slow ops, oldest one blocked for 65
        # sec`), an OSD's own count (`17 slow requests, 6 included below; oldest blocked for >`)
        r"\bHEALTH_(?:WARN|ERR)\b[^\n]*?\b[1-9]\d*\s+(?:pgs?\s+(?:are\s+)?(?:stuck\s+)?(?:stale"
        r"|down|incomplete|inactive|degraded|undersized|peering|unclean)|osds?\s+(?:are\s+)?down"
        r"|requests?\s+are\s+blocked)\b"
        r"|\b[1-9]\d*\s+slow\s+ops,\s+oldest\s+one\s+blocked\s+for\s+\d+\s+sec"
        r"|\b[1-9]\d*\s+slow\s+requests,\s+\d+\s+included\s+below;\s+oldest\s+blocked\s+for\b"
        r"|\b[1-9]\d*\s+requests?\s+are\s+blocked\s+>\s+\d+\s+sec",
        ("health_warn", "health_err", "slow ops", "slow requests", "are blocked"),
        "The Ceph cluster reports itself unhealthy (placement groups stale, down or degraded, "
        "OSDs down, client requests blocked or slow): every client's I/O to it waits; the "
        "storage cluster's, not the node's.",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.55),
    ),
    rule(
        "netfs.silly_rename_busy",
        # the NFS client renames a file deleted while open to .nfsXXXX (silly rename) and keeps it
        # until the last close: removing its directory meanwhile fails with EBUSY on that file
        r"\bDevice or resource busy: '(?:[^'\n]*/)?\.nfs[0-9a-fA-F]{8,}'",
        ("device or resource busy",),
        "A directory removal failed on an NFS client's `.nfsXXXX` file (a file deleted while "
        "still open, kept until its last close): expected NFS behaviour at cleanup, no fault of "
        "the filesystem; close the file before removing its directory.",
        verdict(C.BENIGN, B.APPLICATION, K.JOB, S.INFO, A.NONE, 0.6),
    ),
    rule(
        "netfs.data_lost",
        r"This client was evicted by \S+|Evicted from \S+ \(at \S+\) after server handle changed"
        r"|lock callback timer expired after \d+s: evicting client|dirty page discard: .* may get "
        r"corrupted|\bLustreError: .*(?:ASSERTION\(.*\) failed|LBUG)"
        r"|\bceph: (?:\[\S+ \d+\]: )?mds\d+ (?:reconnect (?:denied|rejected)|rejected session)"
        r"|\bauto reconnect after blocklisted|\bis being expelled\b|Lost membership in cluster"
        r"|unmounted by the system with return code|Disk failure\.\s+Volume|\bMMFS_DISKFAIL\b"
        r"|Failed to connect to file system daemon|Connect failed on all available routes"
        # (a FUSE daemon gone too, in any case or in Chinese: `stat /jfs/x: transport endpoint
        # is not connected`, `无法访问/var/...: 传输端点尚未连接`)
        r"|(?:^|(?<=[\s'\"(])|(?<=访问))'?/[^\s':/]{0,200}(?:/[^\s':/]{0,200}){0,30}'?: "
        r"(?:(?i:Transport endpoint is not connected)|Cannot send after transport endpoint shutdown"
        r"|传输端点尚未连接)"
        r"|Transport endpoint is not connected:? '?/"
        # GlusterFS' own log (`[MSGID: 112089] [nfs.c:478:...] 0-nfs: Failed to lookup root:
        # Transport endpoint is not connected`): a brick or its server lost
        r"|\[MSGID: \d+\] \[[\w.-]+:\d+:\w+\] [^\n]*\bTransport endpoint is not connected\b"
        # CephFS' session refused or closed by the MDS; GPFS' daemon down or a forced unmount
        r"|\bceph: (?:\[\S+ \d+\]: )?mds\d+ session blocklisted"
        r"|\bmmfs daemon is shutting down abnormally|\bwas forced to unmount\b"
        r"|\bfs_forced_unmount\b|\bGPFS (?:has |was |got )?unmounted\b"
        r"|\bFILESYSTEM\s+FAILED\b[^\n]*\b(?:stale_mount|fs_unmounted)\(",
        (
            *("evict", "dirty page discard", "assertion", "lbug", "reconnect", "rejected"),
            *("blocklisted", "expelled", "lost membership", "unmounted by the system"),
            *("disk failure", "diskfail", "file system daemon", "all available routes"),
            *("transport endpoint", "mmfs daemon", "forced to unmount", "传输端点"),
            "fs_forced_unmount",
            "gpfs",
            "filesystem",
        ),
        "The node's network or parallel filesystem client lost its server's state (evicted, "
        "expelled, unmounted, a reconnect refused, a FUSE daemon dead): the job's open files "
        "and unwritten data are gone; I/O fails until the mount recovers.",
        judge=_lost_unless_planned,
    ),
    rule(
        "netfs.lnet_error",
        r"\bLNetError: .*(?:Timed out RDMA with|Timed out tx|Closing conn to|UNREACHABLE"
        r"|CONNECT ERROR|REJECTED|DISCONNECTED|device removal|Can't connect to)"
        r"|@@@ Request sent has (?:failed due to network error|timed out for sent delay)",
        ("lneterror", "@@@"),
        "LNet (Lustre's transport) failed to reach a server or peer over the fabric: the "
        "network between the node and its storage (its NIC, cable or switch).",
        verdict(C.NETWORK, INFRA, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.5),
    ),
    rule(
        "netfs.reconnected",
        r"\bConnection restored to \S+|\bceph: (?:\[\S+ \d+\]: )?mds\d+ (?:reconnect success"
        r"|came back|caps renewed)|\blibceph: (?:\[\S+ \d+\]: )?mon\d+ .*session established"
        r"|\bConnected: \S+@\S+ \(protocol:",
        ("restored", "reconnect success", "came back", "caps renewed", "established", "connected"),
        "The filesystem client reconnected to its server: the waits before it were recovered.",
        verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "netfs.caller_error",
        r"\bLustreError: .*(?P<quota>quota|\brc\s*=?\s*-122\b)"
        r"|\bLustreError: .*\brc\s*=?\s*-(?:1|2|13|17)\b",
        ("lustreerror",),
        "The Lustre client returned the caller's own error (a missing file, a permission, an "
        "existing name) or a quota exceeded: the job's, not the filesystem's.",
        judge=_caller_error,
    ),
    rule(
        "netfs.server_wait",
        r"\bConnection to \S+ \(at \S+\) was lost\b|@@@ Request sent has timed out for slow reply"
        r"|### lock timed out .* entering recovery"
        r"|\bceph: (?:\[\S+ \d+\]: )?mds\d+ (?:caps (?:went |still )?stale|hung"
        r"|closed our session)\b"
        r"|Communication error: (?:Node: |Receive timed out from: )"
        r"|Retrying communication with (?:metadata )?node"
        # beegfs-ctl --listtargets --state: a target offline or probably so
        r"|^\s*\d+\s+(?:Probably-offline|Offline)\s+(?:Good|Needs-resync|Bad)\b"
        # ceph health detail: clients that hold capabilities, an MDS's slow requests
        r"|\[WRN\] MDS_(?:SLOW_REQUEST|CLIENT_LATE_RELEASE|SLOW_METADATA_IO|CLIENT_RECALL)\b"
        r"|lease renewal is overdue|Disk lease period expired"
        # JuiceFS' client on an object store that does not answer (`upload chunks/...: timeout
        # after 1m0s (try 4)`, `flush 580362 timeout after waited 5m0s`)
        r"|\bjuicefs\[\d+\] <(?:WARNING|ERROR)>: (?:upload|flush|read|write|get|put|fetch)\b"
        r"[^\n]*\btimeout after\b"
        # libceph's requests to an OSD that time out, an OSD marked down, a socket to the MDS
        # that failed; BeeGFS' messaging that cannot reach a server
        r"|\blibceph: (?:\[\S+ \d+\]: )?(?:tid \d+ on osd\d+ timeout|osd\d+ down\b"
        r"|mds\d+ \S+ socket error|mon\d+ \S+ connect error|connect \S+ error -\d+"
        # a socket to a monitor closed before the handshake ended (`mon0 (1)10.0.0.8:3300
        # socket closed (con state V1_BANNER)`): the client never reaches it (not OPEN's
        # routine close of an idle connection)
        r"|mon\d+ \S+ socket closed \(con state (?!OPEN\)|STANDBY\)|CLOSED\))\w+\))"
        r"|\bMessaging \(RPC\): Unable to connect to\b"
        # any other LustreError (the caller's own are netfs.caller_error's)
        r"|\bLustreError: \S"
        # a node's mount that hangs until its timeout (cluster-toolkit's `mount of path '/home'
        # failed: ... Command '['mount', '/home']' timed out after 120 seconds`)
        r"|\bmount of path '\S+' failed\b[^\n]*\btimed out\b"
        r"|\bCommand '\['mount',[^\n]{0,80}\] timed out after \d+ seconds"
        # a person's word for the server itself gone (not `back up`, not denied)
        r"|(?<!not )(?<!never )\bNFS server(?: VM)?\b[^.\n]{0,40}?(?<!not )(?<!n't )(?<!never )"
        r"(?<!will )(?<!'ll )\b(?:go(?:es)? down|went down|is down|keeps? (?:crashing|going down)"
        r"|crashe[sd]|hangs|hung|(?:is|became|becomes) unreachable)\b",
        (
            *("connection to", "timed out", "lock timed out", "stale", "hung", "communication"),
            *("lease", "lustreerror", "libceph", "messaging (rpc)", "closed our session"),
            *("mount of path", "['mount',", "nfs server", "offline", "mds_", "juicefs["),
        ),
        "The filesystem client is waiting for its server (a lost connection, a request or "
        "lock timed out, stale capabilities, retries): I/O stalls until it recovers; a fault "
        "when it repeats or never reconnects.",
        host_storage(S.WARNING, A.MONITOR, 0.4),
    ),
)

RECOVERED_BY: dict[str, frozenset[str]] = {
    "netfs.server_wait": frozenset({"netfs.reconnected"}),
}
"""For a rule of waiting, the rules whose finding later in the same input says the wait ended
(a wait said more than once stands: a flapping server)."""
ONLY_TO_RECOVER = frozenset({"netfs.reconnected"})
"""Rules that only say a wait ended: no finding of their own (a mount's routine `session
established` is not worth one)."""
