"""RDMA fabric rules: InfiniBand tools, the subnet manager, verbs, UCX, rdma-core, Open MPI.

What the NIC's driver says is ``rules_nic``'s; these read the fabric and the transports above
it: a port's state (``ibdev2netdev`` "(Down)", ``ibv_devinfo`` PORT_DOWN, ``ibstat`` State: Down
/ Polling, a port stuck in INIT), infiniband-diags' error counters, narrow links and failed
management queries, verbs' async events, and the transports' failures (a queue pair that would
not connect, a peer unreachable, a completion with an error, the locked-memory limit). Every
finding is the network's; the locked-memory limit blames the job's configuration. They are
tried right after ``rules_nic.RULES``, in the order written here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.explain.rules_nic import INFRA, nic_fault
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

_UNSUPPORTED = re.compile(r"[^\n]*?\bfailed ?: Operation not supported\b")
"""The rest of a verbs failure's line, where the device says it does not support the verb."""
_VERBS_FAILED = nic_fault(S.ERROR, A.CHECK_NETWORK, 0.55)
_NOT_SUPPORTED = verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.5)


def _verbs_failed(m: re.Match[str]) -> Verdict:
    """The NIC's, unless the device said it does not support the verb (the job's set-up)."""
    return _NOT_SUPPORTED if _UNSUPPORTED.match(m.string, m.start()) else _VERBS_FAILED


EXPLAINED_BY = {
    "storage.nvme": frozenset({"rdma.error_completion_dump"}),
    "rdma.no_device": frozenset({"software.version_mismatch"}),
}
"""NVMe over RDMA: the host driver's recovery and reconnect lines follow from a completion that
failed on the fabric, which the same input shows (`RECV for CQE ... failed with status transport
retry counter exceeded`): the fabric's fault, not the disk's. No RDMA device follows from a
verbs provider that refuses the kernel's ABI (rules_container's version mismatch)."""

PORT_DOWN_RULE = "rdma.port_down"
_HCA = re.compile(r"^\s*(?:CA '(?P<ca>[^']+)'|hca_id:\s*(?P<id>\S+))")
_PORT_ACTIVE = re.compile(r"^\s*(?:State:\s+Active|state:\s+PORT_ACTIVE)\b")
_PORT_DOWN = re.compile(
    r"^\s*(?:State:\s+(?:Down|Initializing)|Physical state:\s+Polling"
    r"|state:\s+PORT_(?:DOWN|INIT))\b"
)


@dataclass
class HcaPorts:
    """The HCAs an input lists (ibstat's `CA 'mlx4_0'`, ibv_devinfo's `hca_id:`) with a port
    down and with a port active: a port down beside an active port of the same HCA is a spare
    port left uncabled or a cable fault, which the text cannot tell apart (the corpus files it
    `unknown`); a port down on an HCA with none active, or outside any HCA's listing, is the
    network's. (One HCA a rail: on a node of single-port HCAs a rail down is never excused.)"""

    current: str = ""
    down: set[str] = field(default_factory=set)
    active: set[str] = field(default_factory=set)

    def feed(self, body: str) -> None:
        """Read one line of a listing (a line without `CA '`, `hca_id` or `tate:` says
        nothing)."""
        header = _HCA.match(body)
        if header is not None:
            self.current = header["ca"] or header["id"]
        elif self.current and _PORT_ACTIVE.match(body):
            self.active.add(self.current)
        elif _PORT_DOWN.match(body):
            self.down.add(self.current)

    def spare_ports_only(self) -> bool:
        """Whether every port down stands beside an active port of its own HCA."""
        return bool(self.down) and "" not in self.down and self.down <= self.active


RULES: tuple[Rule, ...] = (
    rule(
        "rdma.port_not_active",
        # ibstatus: a port whose link trained but that the subnet manager never made active
        # (`state: 2: INIT` beside `phys state: 5: LinkUp`); ibdiagnet's errors (`-E- lid=...`)
        r"^\s*state:\s+2: INIT\b|^\s*-E-\s+(?:lid=0x[0-9a-f]+\s+dev=\d+|Link|Port\b|PM\b)",
        ("init", "-e-"),
        "An InfiniBand port stuck in INIT (the link is up but no subnet manager made it "
        "active), or ibdiagnet reporting an error on a port or link: the fabric, not the job.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.45),
        flags=re.MULTILINE,
    ),
    rule(
        "rdma.mad_query_failed",
        # infiniband-diags (ibqueryerrors, perfquery, smpquery): a port's management query got
        # no answer (`ibwarn: [1203] query_and_dump: PortXmitDiscardDetails query failed on
        # HOST, Lid 1051 port 1`)
        r"\bibwarn: \[\d+\] \w+: [^\n]{0,80}?\bquery failed\b|\bibwarn: \[\d+\] \w+: "
        r"(?:smp|perf|mad)_?\w* (?:query )?(?:failed|timeout)\b"
        r"|\bibwarn: \[\d+\] (?:mad_rpc: )?_do_madrpc(?: failed|: recv failed)",
        ("ibwarn",),
        "An InfiniBand tool's management query to a port got no answer (MAD timeout): the port, "
        "its link or the switch path to it is down or dropping management packets.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        "rdma.unreachable",
        r"\bRDMA_CM_EVENT_(?:UNREACHABLE|ADDR_ERROR|ROUTE_ERROR|CONNECT_ERROR|REJECTED)\b"
        r"|\bucp_ep_create\([^)]*\) failed: Destination is unreachable"
        r"|\bIB Async event on \S+: (?:port error|local catastrophic error|QP fatal error"
        r"|CQ error|device fatal)"
        # IPoIB's transmit watchdog (drivers/infiniband/ulp/ipoib)
        r"|\bib[\w.]*: transmit timeout: latency \d+ msecs",
        ("rdma_cm_event_", "ucp_ep_create", "ib async event", "transmit timeout"),
        "The RDMA fabric cannot reach the peer (rdma_cm's unreachable, route or rejected "
        "connects, UCX's destination unreachable), a verbs async event says the port or device "
        "failed, or IPoIB stopped transmitting: the NIC, its link or the switch path to the peer.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "ib.link_width_unexpected",
        r"-E- Link: \S+ - Unexpected actual link (?:width|speed)\b",
        ("unexpected actual link",),
        "ibdiagnet found a link trained narrower or slower than both ends allow (`Unexpected "
        "actual link width 1x ... should be 4x`): a cable, a transceiver or a port.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.7),
    ),
    # InfiniBand fabric tools and the subnet manager (infiniband-diags, OpenSM, NCCL's async
    # events, ethtool's PHY counters; catalogued in the session notes of 2026-12-05)
    rule(
        "ib.error_counters",
        r"\[(?:SymbolErrorCounter|LinkErrorRecoveryCounter|PortRcvErrors"
        r"|PortRcvRemotePhysicalErrors|LocalLinkIntegrityErrors|ExcessiveBufferOverrunErrors"
        r"|PortXmitDiscards|PortLocalPhysicalErrors) == [1-9]\d*(?: \([^)]*\))?\]"
        r"|^\s*(?:SymbolErrorCounter|LinkErrorRecoveryCounter|PortRcvErrors|PortXmitDiscards"
        r"|PortRcvRemotePhysicalErrors|LocalLinkIntegrityErrors|ExcessiveBufferOverrunErrors)"
        r":\.+\s*[1-9]\d*\s*$"
        r"|^\s*(?:rx_crc_errors_phy|rx_pcs_symbol_err_phy|rx_symbol_err_phy):\s+[1-9]\d*\s*$"
        # a link that went down once or twice is a boot or a reseat; more is a flapping link
        r"|^\s*(?:LinkDownedCounter:\.+|link_down_events_phy:)\s*(?:[3-9]|[1-9]\d+)\s*$"
        r"|\[LinkDownedCounter == (?:[3-9]|[1-9]\d+)(?: \([^)]*\))?\]"
        # a link's two ends as ibqueryerrors' `--report-port` prints them (`HCA-1:Port 1 ... -
        # LinkDowned:1 / LinkDowned:3`): downs on both ends of one link
        r"|\bLinkDowned:[1-9]\d* / LinkDowned:[1-9]\d*\b",
        ("counter", "errors", "_phy", "discards", "linkdowned"),
        "A port's error counters are not zero (ibqueryerrors, perfquery, ethtool -S): symbol "
        "errors, link recoveries or downs, receive errors. The link (cable, optic or port) is "
        "bad if they keep rising; congestion counters (PortXmitWait) are not read.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        "ib.degraded_link",
        r"\(\s*Could be (?:[\d.]+ Gbps|\d+X)[^)]*\)"
        # ibcheckwidth's and ibcheckportwidth's verdict (`Linkwidth (1X) not at maximum width
        # supported (1XOR4X)`), and the same for the speed
        r"|\bLink(?:width|speed) \([^)\n]+\) not at maximum (?:width|speed) supported\b",
        ("could be", "not at maximum"),
        "iblinkinfo marks a link that trained below what both ends support (`Could be 53.125 "
        "Gbps`, `Could be 4X`): a degraded cable or port; traffic over it is slower.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "ib.sm_port_down",
        r"\bOpenSM\b.*\bSM port is down\b|^\s*SM port is down\s*$",
        ("sm port is down",),
        "The subnet manager's own port went down: the fabric has no working subnet manager "
        "until a standby takes over; new ports and paths cannot be set up.",
        verdict(C.NETWORK, INFRA, K.SWITCH, S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "ib.async_port_error",
        # three NCCL wordings: `Got async event : port error`, `Got async error event: port
        # error`, `mlx5_0:1 Got non-fatal async event: port error(10)`
        r"NET/IB ?: (?:\S+ )?Got (?:non-fatal |fatal )?async (?:error )?event ?: port error"
        # verbs' own name for the event (`IBV_EVENT_PORT_ERR`), a path migration that failed or
        # had no port left (Open MPI's openib: `APM: already all ports were used`)
        # (not a manual's list of the events, each name followed by its description:
        # `IBV_EVENT_PORT_ERR Link became unavailable on a port`)
        r"|\bIBV_EVENT_(?:PORT_ERR|PATH_MIG_ERR)\b(?!\s+[A-Z][a-z]*\s+[a-z]+\s+[a-z])"
        r"(?!\s*[:\-–]\s*(?:Link became unavailable|A connection failed to migrate))"
        r"|\bAPM: already all ports were used\b"
        r"|^\s*already all ports were used port_num \d+"
        # IPoIB that cannot attach its queue pair to a multicast group (not a send-only join,
        # printed on healthy fabrics)
        r"|\bib[\w.]*: (?:failed to attach to multicast group|couldn't attach QP to multicast "
        r"group)\b",
        ("async", "ibv_event_", "apm:", "multicast group", "all ports were used"),
        "NCCL (or a verbs program) got a port-error event from the HCA, a path migration had no "
        "port left, or IPoIB could not join its multicast group: the port went down under the "
        "job or the fabric refused it.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "rdma.gpu_memory_unregistered",
        # NVSHMEM's transports that cannot use GPU memory with the NIC (`WARN: device mlx5_0
        # cannot allocate buffer on the specified memory type. Skipping...`) and verbs' queue
        # pair that would not move to its next state (`ibv_modify_qp failed`, NVSHMEM's IBRC)
        r"\bWARN: device \S+ cannot allocate buffer on the specified memory type\b"
        r"|^\s*(?:\S+\.cpp:\d+:\s*(?:non-zero status: -?\d+|NULL value)\s+)?ibv_modify_qp failed\b",
        ("cannot allocate buffer", "ibv_modify_qp failed"),
        "The NIC cannot be used with the GPU's memory (NVSHMEM skips every device: GPUDirect "
        "RDMA, peer memory or dma-buf, is not available) or a queue pair would not move to "
        "its connected state (an address, GID or RoCE setting the peers do not share): the "
        "RDMA path of the job is not set up.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.5),
    ),
    rule(
        "rdma.mr_failed",
        # perftest's own words when the NIC would not register its buffer (`Couldn't allocate
        # MR`, `Failed to create MR`): with `--use_cuda` a GPU buffer that GPUDirect RDMA could
        # not map (nvidia-peermem not loaded), else host memory over the locked-memory limit
        r"^\s*Couldn['’]t allocate MR\b|^\s*(?i:Failed to create MR)\b",
        ("couldn't allocate mr", "couldn’t allocate mr", "failed to create mr"),
        "perftest could not register its buffer with the NIC (`Couldn't allocate MR`): for a GPU "
        "buffer (`--use_cuda`) GPUDirect RDMA is not working (nvidia-peermem not loaded, or not "
        "built for this driver); for host memory the locked-memory limit. The test's crash after "
        "it is its consequence.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.5),
    ),
    # UCX, rdma-core and Open MPI over verbs (catalogued in the session notes of 2026-12-05)
    rule(
        "rdma.memlock",
        r"ibv_reg_mr\(.*\) failed: Cannot allocate memory|Please set max locked memory"
        r"|Call to ibv_reg_\w*mr\w* failed with error Cannot allocate memory"
        r"|max locked memory \(ulimit -l\)(?!:?\s*unlimited)"
        # Open MPI's openib help text (help-mpi-btl-openib.txt)
        r"|\bmemlock limits are set too low\b"
        # Open MPI's openib connection setup: a queue pair the NIC would not create for ENOMEM
        r"|\berror creating qp errno says Cannot allocate memory\b",
        ("ibv_reg_mr", "max locked memory", "memlock limits", "error creating qp"),
        "Registering memory with the NIC failed for the locked-memory limit (`ulimit -l`): the "
        "RDMA path fails (filed `network`, as the corpus's collectors file it), but the job's "
        "(or its container's) configuration is to change, not the host's memory; raise memlock.",
        verdict(C.NETWORK, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7),
    ),
    rule(
        "rdma.transport_timeout",
        r"UD endpoint \S+ to .*: unhandled timeout error|\(status Endpoint timeout\)"
        r"|status: Endpoint timeout\b|The InfiniBand retry count between two MPI processes has"
        r"|\bUCX\s+ERROR\s+Error Endpoint timeout\b"
        # UCX's fatal transport error, and a UCP endpoint that could not connect for it
        # (`ud_iface.c:781  Fatal: transport error: Endpoint timeout`, `ucp_ep_create(proc=2)
        # failed: Endpoint timeout`)
        r"|\bFatal: transport error: Endpoint timeout\b"
        r"|\bucp_ep_create\([^)\n]*\) failed: Endpoint timeout\b"
        r"|\bUCX\s+ERROR\b[^\n]*\berror 'Endpoint timeout' on \S+ will not be handled\b"
        r"|ib_mlx5_log\.c:\d+\s+UCX\s+ERROR (?:Transport retry count|RNR retry count) exceeded",
        ("endpoint", "retry count"),
        "The RDMA transport gave up on a peer (UCX's endpoint timeout, its UD endpoint's "
        "timeout, Open MPI's retry count exceeded): the link, the NIC or the switch between "
        "the two dropped packets, or the peer died; check the port counters on both sides.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        PORT_DOWN_RULE,
        r"==> \S+ \(Down\)|state:\s+PORT_(?:DOWN|INIT)\b|^\s*State: (?:Down|Initializing)\s*$"
        r"|Physical state: Polling"
        r"|ibpanic: .*failed|^\s*(?:Phys)?LinkState:\.+(?:Down|Polling|Disabled)\s*$"
        r"|sys files not found \(/sys/class/infiniband"
        r"|(?:^|\s)state:\s+1: DOWN\b|(?:^|\s)phys state:\s+(?:2: Polling|3: Disabled)\b",
        (
            "(down)",
            "port_down",
            "state: down",
            "polling",
            "ibpanic",
            "linkstate:",
            "infiniband",
            "state:",
        ),
        "An InfiniBand/RoCE port is down, or up but never made active by a subnet manager "
        "(ibdev2netdev, ibv_devinfo's PORT_INIT, ibstat's Initializing, ibstatus's "
        "'state: 1: DOWN' / 'phys state: 3: Disabled') or the IB tools "
        "cannot read it: collectives over that rail fail or fall back.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.65),
    ),
    rule(
        "rdma.qp_transition_failed",
        r"(?i:Failed to modify QP)(?: \d+)?(?: state)?(?: from \w+)? to (?:INIT|RTR|RTS)\b"
        # the same through mlx5's DevX (NVSHMEM's IBGDA: `Error in mlx5dv_devx_obj_modify for
        # INIT2RTR_QP with syndrome 29e0df`)
        r"|\bmlx5dv_devx_obj_modify for (?:RST2INIT|INIT2RTR|RTR2RTS)_QP\b",
        ("failed to modify qp", "mlx5dv_devx_obj_modify"),
        "An RDMA queue pair could not be connected (the peer did not answer, errno 110, or "
        "was unreachable): the two NICs cannot talk (rail-only fabric, GID or routing).",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "rdma.peer_unreachable",
        # perftest's out-of-band connection to its server (perftest_communication.c), Open
        # MPI's openib BTL that cannot find the peer's endpoint (btl_openib_connect_udcm.c)
        r"\bCouldn't connect to \S+:\d+\s*$|\bUnable to init the socket connection\b"
        r"|\bUnable to Connect the HCA's through the link\b"
        r"|\bFailed to exchange data between server and clients\b"
        r"|\budcm_\w+\] could not find (?:endpoint with port|associated endpoint)"
        r"|\berror exit from mca_btl_openib_proc_create\b",
        (
            *("couldn't connect", "unable to init the socket", "could not find"),
            *("error exit from", "unable to connect the hca", "failed to exchange data"),
        ),
        "An RDMA tool or transport could not reach its peer (perftest's connection to its "
        "server, Open MPI's openib endpoints): the peer is down or unreachable over the "
        "fabric's out-of-band network; check the peer and the route between them.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.5),
        flags=re.MULTILINE,
    ),
    rule(
        "rdma.no_device",
        # the node shows no usable RDMA device: rdma-core's and perftest's words, the RDMA
        # shared-device plugin's (k8s-rdma-shared-dev-plugin) device that is not there
        r"\blibrdmacm: Fatal: no RDMA devices found\b"
        r"|\bno userspace device-specific driver found for /sys/class/infiniband_verbs/"
        r"|\bUnable to find the Infiniband/RoCE device\b"
        r"|\bRDMA device \\?\"[^\"\\\n]+\\?\" not found\b|\bno Rdma Devices were found\b"
        # librdmacm cannot bind to the address: no RDMA device carries it
        r"|\brdma_bind_addr(?:\(\))? failed\b"
        # rping's and other tools' perror of it
        r"|\brdma_(?:bind_addr|create_ep|create_id|resolve_addr): "
        r"(?:Cannot assign requested address|No such device)\b"
        # ibv_get_device_list() failing, and ibstatus finding no device
        r"|\bFailed to get IB devices list\b|^\s*Fatal error:\s+No devices\s*$"
        r"|^\s*No IB devices found\s*$"
        # UCX: the RDMA device asked for is not there, only TCP ones
        r"|\bnetwork device '\w+:\d+' is not available, please use one or more of\b",
        (
            *("no rdma devices", "device-specific driver", "infiniband/roce device", "not found"),
            *("rdma_bind_addr", "rdma_create", "rdma_resolve", "ib devices list", "no devices"),
            *("no ib devices", "is not available, please use"),
        ),
        "The node shows no usable RDMA device (rdma-core finds none or has no driver for it, "
        "perftest finds no InfiniBand/RoCE device, the device plugin's RDMA device is missing): "
        "the NIC, its driver or its firmware; jobs fall back to sockets or cannot start.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "rdma.no_active_ports",
        # Open MPI's openib BTL (help-mpi-btl-openib.txt: no active ports found)
        r"but there are no active ports detected \(or Open MPI was unable to use",
        ("no active ports detected",),
        "Open MPI found the node's InfiniBand/RoCE device but no active port (cables, the "
        "subnet manager, a link down): the job falls back to TCP or fails.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "rdma.no_provider",
        # libfabric's fi_getinfo with no provider for the fabric asked (-61, ENODATA); not the
        # core's `provider tcp returned -61` per provider it tried, printed on healthy nodes
        r"\bfi_getinfo\w*(?:\(\))?:?\s+failed\b[^\n]{0,20}?-61\b"
        # fi_info's own report (`fi_info -p efa` -> `fi_getinfo: -61 (No data available)`)
        r"|^\s*fi_getinfo: -61\b",
        ("fi_getinfo",),
        "libfabric found no provider for the fabric asked (fi_getinfo returned -61, no data): "
        "the RDMA NIC (EFA, verbs) or its driver is missing on the node, or the provider "
        "named is not built; collectives fall back to sockets or fail.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.5),
    ),
    rule(
        "rdma.verbs_failed",
        r"\bCall to ibv_\w+ failed(?![^\n]*\bretrying \d+/\d+)"
        r"|\b(?:ibv|rdma)_\w+: (?:Invalid argument|Cannot allocate memory)"
        # UCX's `ibv_create_cq(cqe=4096) failed: <errno>`, Open MPI's openib BTL posting a work
        # request (`error posting send request error 12: ...`)
        r"|\bibv_\w+\([^)\n]*\)(?: for [^:\n]{0,60}?)? failed ?: [A-Z]"
        # a queue pair that would not move to its next state, Open MPI's help text on one
        # that could not be made (`Failed to modify UD QP to INIT on mlx5_0: Operation not
        # permitted`, `Failed to create a queue pair (QP):`)
        r"|\bFailed to modify (?:UD |RC |DC |UC )?QP to (?:INIT|RTR|RTS)\b"
        r"|^\s*Failed to create a queue pair \(QP\):?"
        # a program's own report of a verbs call and its errno (`ibv_post_send failed: File
        # name too long (errno: 36), retry 7/7`)
        r"|\bibv_\w+ failed(?: after \d+ retries)?: [A-Z][^\n(]*\(errno:? ?\d+\)"
        r"(?:,? retry (?P<try>\d+)/(?P=try)\b|(?![^\n]*\bretry\b))"
        r"|\bibv_\w+ failed with errno \d+"
        # UCX creating a queue pair (`mlx5dv_devx_obj_create(QP) failed, syndrome 0: Cannot
        # allocate memory`, `failed to create UD QP TX wr:256 ...: Cannot allocate memory`)
        # (not at UCX's DIAG or DEBUG level: a probe it falls back from, DEVX off in a pod)
        r"|(?<!DIAG )(?<!DEBUG )\bmlx5dv_\w+\([^)\n]*\) failed\b"
        r"|\bUCX\s+ERROR\b[^\n]*\bfailed to create (?:\w+ )?QP\b"
        r"|\berror posting (?:send|receive|recv) request error \d+"
        r"|\berror polling [LH]P CQ with -?\d+ errno says\b|\bcannot resize completion queue, error"
        r"|failed on ibv_cmd_\w+|\bumem get failed|Failed to register memory \S+: Bad address"
        r"|nvidia_p2p_get_pages\([^)]*\) failed|\bibv_reg_\w*mr\w* failed"
        r"|Couldn't (?:register (?:GPU )?MR|allocate PD|create (?:CQ|QP)\b|create IB resources?\b)"
        # perftest's own (perftest_resources.c: `Unable to create QP.`, `Failed to create QP.`)
        r"|^\s*(?:Unable|Failed) to create QP\.?\s*$",
        (
            "ibv_",
            "rdma_",
            "error posting",
            "error polling",
            "cannot resize completion queue",
            "mlx5dv_",
            "failed to create",
            "failed to modify",
            "umem get failed",
            "failed to register memory",
            "nvidia_p2p_get_pages",
            "couldn't register",
            "couldn't allocate pd",
            "couldn't create",
            "to create qp",
        ),
        "An RDMA verbs call failed (create/modify a queue pair or CQ, register memory, pin GPU "
        "pages for GPUDirect; perftest's 'Couldn't register MR' / 'Couldn't create QP'): the "
        "NIC, its driver or the peer-memory module, not the job. NCCL's retries (`retrying "
        "1/35`) are not read. A verb the device does not support (`ibv_create_srq() failed: "
        "Operation not supported`: a library's transport the NIC lacks, UCX's RC verbs on EFA) "
        "is the job's set-up.",
        judge=_verbs_failed,
    ),
    rule(
        "rdma.error_completion_dump",
        # the mlx5 driver's dump of a failed completion, and perftest's report of one
        r"\b(?:Requester|Responder) error cqe on cqn\b"
        # mlx5e's own error completion on a send queue (en/reporter_tx.c, en/txrx.h)
        r"|\bmlx5_core \S+ \S+: (?:Error cqe on cqn|ERR CQE on SQ)\b"
        # UCX's verbs completions by name (ib_mlx5_log.c: `Local protection on mlx5_0:1/IB`)
        r"|\b(?:Local protection|Local access|Remote access|Remote OP|Remote QP|Local QP operation"
        r"|Local length|Remote invalid request|Invalid request|Remote side aborted|Bad response"
        r"|Transport retry(?: count exceeded)?|RNR retry|Receive-no-ready retry count exceeded)"
        r"(?: error)? on \w+:\d+/(?:IB|RoCE)\b"
        r"|\bUCX\s+ERROR\s+(?:Send|Receive|Recv) completion with error on qp\b"
        # the HCA's asynchronous error events as UCX reports them (ib_device.c); port active,
        # LID, GID and SM changes are a fabric's normal events
        r"|\bUCX\s+ERROR\s+IB Async event on \S+: (?!(?:port active|LID change|GID table change"
        r"|SM change|client reregist|port .{0,10}active))[^\n]*\berror\b"
        # Open MPI's openib completion banners (`error polling LP CQ with status RECEIVER NOT
        # READY RETRY EXCEEDED ERROR`)
        r"|\berror polling [LH]P CQ with status (?!SUCCESS)[A-Z ]+ERROR"
        # the same banner wrapped after `with status` (`RETRY EXCEEDED ERROR status number 12`)
        r"|^\s*(?:status\s+)?(?!SUCCESS)[A-Z][A-Z ]+ERROR status number \d+ for wr_id\b"
        r"|\berror polling [LH]P CQ with status (?!SUCCESS)[A-Z][A-Z ]+$"
        # the NVMe over RDMA host driver's completion that failed for the transport
        r"|\bfor CQE 0x[0-9a-f]+ failed with status (?:transport retry|RNR retry|local protection"
        r"|remote access|remote operation)"
        r"|\b\w+:\d+:\(pid \d+\): (?:dump error cqe|WC error: \d+"
        r"|local (?:QP operation|protection) err)"
        # rdma-core's libmlx5, for every error completion but a flush
        r"|^mlx5: \S+: got completion with error:"
        r"|\bCompletion with error at (?:client|server)\b|^\s*Failed status \d+: wr_id \d+"
        r"|Failed to complete run_iter_\w+ function successfully"
        # ParaStation MPI's pscom over verbs (`<PSP:r0000359:ib:ibv_poll_cq(): ...>`)
        r"|<PSP:\S+:ib:ibv_\w+\(\): Infiniband returned"
        r"|<PSP:\S+:connection to \S+ \(type:openib,[^)]*\) : (?:read|write) : "
        r"(?:Broken pipe|Connection reset)",
        (
            *("error cqe", "wc error", "local qp operation", "local protection", "for wr_id"),
            *("completion with error", "failed status", "run_iter_", "<psp:", "err cqe"),
            *("local protection", "remote access", "remote op", "local length", "bad response"),
            *("remote invalid", "transport retry", "rnr retry", "error polling", "remote qp"),
            *("invalid request", "remote side aborted", "local access", "receive-no-ready"),
            *("completion with error on qp", "ib async event", "for cqe"),
        ),
        "An RDMA work request completed with an error (the mlx5 driver's requester or responder "
        "error completion, perftest's 'Completion with error', ParaStation MPI's verbs errors "
        "and broken openib connections): the transfer failed at the NIC "
        "or at its peer (protection, retry exceeded, a remote access error); check both NICs, "
        "the fabric between them and the memory registration.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
)
