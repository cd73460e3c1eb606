"""NIC driver rules: Mellanox/NVIDIA ConnectX (mlx5), AWS EFA, generic RDMA port state.

mlx5 patterns come from the development part of the corpus: gpud's infiniband matcher
(insufficient slot power, port module high temperature), NVSentinel's NIC-driver patterns
(command timeouts "Will cause a leak of a command resource", TX/RX timeouts, NETDEV WATCHDOG in
both kernel formats, health poll miss count, a soft lockup inside ``mlx5e_napi_poll``), probe
failures (``mlx5_load_one failed``) and the health-buffer dump (``synd 0x7: irisc not
responding``, ``assert_var``). EFA has no development record (its only source hashed into the
evaluation part); its patterns are the admin-queue and reset messages of the upstream driver
(drivers/infiniband/hw/efa/efa_com.c), the same ones NVSentinel watches, scoped to ``efa``
or ``infiniband`` device prefixes so that ENA's identical texts do not match. Generic RDMA:
``ibdev2netdev`` "(Down)", ``ibv_devinfo`` PORT_DOWN, ``ibstat`` State: Down / Polling.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"


def _nic(severity: S, action: A, confidence: float) -> Verdict:
    """Return a network verdict pointing at the NIC."""
    return verdict(C.NETWORK, INFRA, K.NIC, severity, action, confidence)


# the EFA driver's device prefix, old (`infiniband efa_0:`) and new (`efa 0000:10:1b.0 rdmap16s27:`)
_EFA_DEV = r"(?:infiniband (?:rdmap\w+|efa_\d+)|\befa \S+(?: (?:rdmap\w+|efa_\d+))?)"
_MLX5 = rf"mlx5_core(?:\.\w+)?(?: (?P<pci>{_PCI}))?(?: \S+)?:?"

RECOVERED_BY: dict[str, frozenset[str]] = {"nic.module_error": frozenset({"nic.link_up"})}
"""For a NIC's event, the rules whose finding later in the same input says it ended."""
ONLY_TO_RECOVER = frozenset({"nic.link_up"})
"""Rules that only say an event ended: no finding of their own."""

RULES: tuple[Rule, ...] = (
    rule(
        "nic.port_training_failed",
        r"\bPort Training State Machine failed\b|\blink_downed\b[^\n]{0,40}?\bdelta=[1-9]",
        ("port training state machine", "link_downed"),
        "An InfiniBand port's link went down (its link_downed counter rose; the port's training "
        "state machine failed): the cable, the transceiver or the switch port.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.mlx5_napi_lockup",
        r"mlx5e_(?:napi_poll|poll_\w+)\b|RIP: \S+:mlx5\w*\+0x",
        ("mlx5e_", "rip:"),
        "A CPU stuck in the mlx5 NAPI poll loop (soft lockup in mlx5e_napi_poll): the NIC "
        "driver is wedged and the node's network with it (NVSentinel#1334). Reboot.",
        _nic(S.ERROR, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "nic.mlx5_health",
        rf"{_MLX5} .*(?:health compromised|synd 0x[0-9a-f]+:|assert_var\[\d\]|assert_exit_ptr"
        r"|assert_callra|ext_synd|irisc not responding|fatal error|health recovery flow aborted"
        r"|Driver is in error state|handling bad device here|starting teardown)",
        ("mlx5_core",),
        "The ConnectX firmware stopped answering the health poll (health buffer dump): the NIC "
        "is down until the driver recovers it or the node reboots.",
        _nic(S.ERROR, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "nic.mlx5_cmd_failed",
        rf"{_MLX5} mlx5_cmd_(?:check|out_err):\d+:\(pid \d+\): \w+\(0x[0-9a-f]+\)"
        r"(?: op_mod\(0x[0-9a-f]+\))? failed, status [\w ]+\(0x[0-9a-f]+\)",
        ("mlx5_cmd_check", "mlx5_cmd_out_err"),
        "A ConnectX firmware command the driver sent failed (`CREATE_QP(0x500) ... failed, status "
        "limits exceeded`, `RTR2RTS_QP ... bad parameter`): the NIC refused a queue pair or a "
        "resource the job's RDMA needed; its connections fail next.",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        "nic.mlx5_cmd_timeout",
        rf"{_MLX5} .*(?:\btimeout\. Will cause a leak of a command resource|No done completion"
        r"|cmd_work_handler.*timeout|wait_func\S*:\d+:.*timeout)",
        ("mlx5_core",),
        "A ConnectX firmware command timed out (ENABLE_HCA, CREATE_DCT, ...): the NIC's firmware "
        "is stuck; NVSentinel treats it as fatal.",
        _nic(S.ERROR, A.REBOOT_NODE, 0.75),
    ),
    rule(
        "nic.mlx_fw_command",
        r"mlx[45]_core \S+: command 0x[0-9a-f]+ failed: fw status = 0x[0-9a-f]+",
        ("mlx4_core", "mlx5_core"),
        "A ConnectX firmware command was refused (mlx4/mlx5 fw status): old or mismatched "
        "firmware; the port may not come up (clustervision/trinity#219: a firmware update "
        "fixed it).",
        _nic(S.ERROR, A.HARDWARE_INSPECTION, 0.65),
    ),
    rule(
        "nic.mlx5_probe_failed",
        r"mlx5_core.*(?:mlx5_load_one failed|probe of \S+ failed with error|handle_hca_cap failed"
        r"|mlx5_function_enable.*failed)",
        ("mlx5_core",),
        "The mlx5 driver could not bring the NIC up: the port is unusable (firmware/driver "
        "mismatch or a bad card).",
        _nic(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.mlx5_power",
        r"Detected insufficient power on the PCIe slot",
        ("insufficient power on the pcie slot",),
        "The NIC reports too little slot power: it may throttle or drop links (gpud, NVSentinel).",
        _nic(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.module_temperature",
        r"Port module event(?:\[\w+\])?.*High Temperature",
        ("port module event",),
        "The NIC's cable/transceiver module is too hot: the link will fail; check cooling and "
        "the module.",
        _nic(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.sensor_temperature",
        rf"{_MLX5} temp_warn:\d+:\(pid \d+\): High temperature on sensors",
        ("temp_warn",),
        "The ConnectX ASIC's own sensors report a high temperature (mlx5 events.c): the NIC "
        "throttles or shuts its ports down; check its cooling.",
        _nic(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "net.gpfs_connections_down",
        # mmhealth's cluster_connections_down event (`Connection to cluster node 10.25.80.143 has
        # all 2 connection(s) down`)
        r"\bConnection to cluster node \S+ has "
        r"(?:all \d+ connection\(s\) down|\d+ bad connection\(s\))",
        ("connection(s) down", "bad connection(s)"),
        "Spectrum Scale (GPFS) lost every connection to another node of its cluster: the "
        "network between the two is down or partitioned; file I/O through that node stalls.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "rdma.port_not_active",
        # ibstatus: a port whose link trained but that the subnet manager never made active
        # (`state: 2: INIT` beside `phys state: 5: LinkUp`); ibdiagnet's errors (`-E- lid=...`)
        r"^\s*state:\s+2: INIT\b|^\s*-E-\s+(?:lid=0x[0-9a-f]+\s+dev=\d+|Link|Port\b|PM\b)",
        ("init", "-e-"),
        "An InfiniBand port stuck in INIT (the link is up but no subnet manager made it "
        "active), or ibdiagnet reporting an error on a port or link: the fabric, not the job.",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.45),
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
        _nic(S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        "rdma.unreachable",
        r"\bRDMA_CM_EVENT_(?:UNREACHABLE|ADDR_ERROR|ROUTE_ERROR|CONNECT_ERROR)\b"
        r"|\bucp_ep_create\([^)]*\) failed: Destination is unreachable"
        r"|\bIB Async event on \S+: (?:port error|local catastrophic error|QP fatal error"
        r"|CQ error|device fatal)"
        # IPoIB's transmit watchdog (drivers/infiniband/ulp/ipoib)
        r"|\bib[\w.]*: transmit timeout: latency \d+ msecs",
        ("rdma_cm_event_", "ucp_ep_create", "ib async event", "transmit timeout"),
        "The RDMA fabric cannot reach the peer (rdma_cm's unreachable or route errors, UCX's "
        "destination unreachable), a verbs async event says the port or device failed, or "
        "IPoIB stopped transmitting: the NIC, its link or the switch path to the peer.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.link_up",
        rf"{_MLX5} \S+: Link up\s*$",
        ("link up",),
        "A port of the NIC came up: it ends a module event said before it (a cable swapped or "
        "reseated); no finding of its own.",
        _nic(S.INFO, A.NONE, 0.5),
    ),
    rule(
        "nic.module_error",
        r"Port module event\[error\]|Port module event: .*(?:unplugged|error)",
        ("port module event",),
        "Any other port module error (cable unplugged, bad module); said once and followed by "
        "the port's link up, a cable swapped (RECOVERED_BY).",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "ib.link_width_unexpected",
        r"-E- Link: \S+ - Unexpected actual link (?:width|speed)\b",
        ("unexpected actual link",),
        "ibdiagnet found a link trained narrower or slower than both ends allow (`Unexpected "
        "actual link width 1x ... should be 4x`): a cable, a transceiver or a port.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.7),
    ),
    rule(
        "nic.pause_storm",
        r"\btx_pause_storm_(?:error|warning)_events:\s*[1-9]",
        ("pause_storm",),
        "The NIC detected a PFC pause storm (it kept sending pause frames, mlx5's "
        "`tx_pause_storm_*_events`): a stuck receiver or a congested RoCE fabric stalls traffic.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.65),
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
        _nic(S.WARNING, A.CHECK_NETWORK, 0.45),
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
        _nic(S.WARNING, A.CHECK_NETWORK, 0.55),
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
        # verbs' own name for the event (`IBV_EVENT_PORT_ERR`)
        r"|\bIBV_EVENT_PORT_ERR\b",
        ("async", "ibv_event_port_err"),
        "NCCL (or a verbs program) got a port-error event from the HCA: the port went down "
        "under the job.",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.55),
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
        r"|\bUCX\s+ERROR\b[^\n]*\berror 'Endpoint timeout' on \S+ will not be handled\b"
        r"|ib_mlx5_log\.c:\d+\s+UCX\s+ERROR (?:Transport retry count|RNR retry count) exceeded",
        ("endpoint", "retry count"),
        "The RDMA transport gave up on a peer (UCX's endpoint timeout, its UD endpoint's "
        "timeout, Open MPI's retry count exceeded): the link, the NIC or the switch between "
        "the two dropped packets, or the peer died; check the port counters on both sides.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.tx_timeout",
        r"NETDEV WATCHDOG: .*transmit queue \d+ timed out|\bTX timeout detected|\bRX timeout on "
        r"channel|mlx5_core TX timeout",
        ("netdev watchdog", "tx timeout", "rx timeout"),
        "The NIC stopped transmitting or receiving (netdev watchdog / mlx5 TX or RX timeout): "
        "the port or its driver hangs.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.7),
    ),
    rule(
        "nic.efa_admin",
        rf"{_EFA_DEV}: "
        r"(?:Wait for completion \(polling\) timeout|The device didn't send any completion"
        r"|Admin queue is closed|Reset indication didn't turn (?:on|off)|Device isn't ready"
        # efa_com.c and efa_main.c (read from source): a register read or an interrupt that
        # never came, a broken completion context, a device that would not initialise
        r"|Reading register timed out|The device sent a completion but the driver didn't"
        r"|Completion context for command_id \S+ is occupied|comp_ctx is NULL"
        r"|EFA device init failed|Failed to enable MSI-X|Doorbells BAR unavailable"
        r"|Failed to get device attributes)|\befa: probe of \S+ failed with error",
        ("infiniband", "efa ", "efa:"),
        "The EFA device stopped answering its admin queue or could not be reset: the node's "
        "EFA network is down (NVSentinel: replace the VM).",
        _nic(S.ERROR, A.REBOOT_NODE, 0.75),
    ),
    rule(
        "nic.ena_reset",
        r"\bena \S+(?: \w+)?: (?:Found a Tx that wasn't completed on time|TX hasn't completed"
        r"|Lost TX completions are above the threshold|Keep alive watchdog timeout"
        r"|The number of lost tx completions is above the threshold"
        r"|Trigger reset is on|ENA admin queue is not in running state"
        r"|The ena device didn't send a "
        r"completion for the admin cmd|Potential MSIX issue|Reset attempt failed|Can not reset the "
        r"device|Can not initialize device|Reg read timeout occurred|Device reset failed)",
        ("ena ",),
        "AWS's ENA driver (drivers/net/ethernet/amazon/ena) found its device stuck: transmit "
        "completions missing, the keep-alive lost, the admin queue down, a reset triggered or "
        "failed: the instance's network stalls until the reset recovers it.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.7),
    ),
    rule(
        "nic.efa_libfabric",
        # the provider's source path (`prov/rxr/`: its RDM layer before libfabric 1.18)
        r"\bprov/(?:efa|rxr)/src/[^\s:]+:\d+(?!\d|:\d+:)|\blibfabric:\d+:\d+:(?:[^:\s]*:)?efa:\w+:\S+?:\d+:?<warn>"
        # the provider's completion errors (efa_errno.h), whatever prefix carries them
        r"|The peer of address \S+ becomes unresponsive|Unresponsive receiver \((?:connection "
        r"previously established|reachable by EFA device)|Unresponsive remote \(was previously"
        r"|Unreachable remote \(never received a response\)"
        # aws-ofi-nccl's completion errors (NCCL WARN NET/OFI ...)
        r"|NET/OFI (?:Request \S+ completed with error|Unable to read from fi_cq_readerr"
        r"|Fatal: rx buffer recv completed with error|Unable to retrieve completion queue entries"
        r"|fi_read failed)",
        ("prov/efa", "prov/rxr", "libfabric:", "unresponsive", "unreachable remote", "net/ofi"),
        "An error from libfabric's EFA provider (its messages carry the provider's source path, "
        "prov/efa/src/..., or the libfabric log prefix with the efa provider; its completion "
        "errors: a peer unresponsive or unreachable) or from the OFI plugin's completions "
        "(aws-ofi-nccl: a request completed with error): the job's EFA transport failed; "
        "check the EFA device and driver, and the peer named, before the job.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.efa_provider_missing",
        r"NET/OFI Couldn't find any optimal provider|NET/OFI OFI fi_getinfo\(\) call failed"
        r"|EFA libfabric provider not detected|EFA device has been detected but a ping test "
        r"has failed"
        r"|\b(?:couldn't|could not|can't|cannot|unable to|failed to) (?:get|find|use|open"
        r"|initiali[sz]e) (?:the )?EFA (?:as (?:a |the )?)?(?:provider|device)\b"
        r"|NET/OFI Unable to find a protocol that worked",
        ("net/ofi", "efa libfabric", "efa device", "efa as", "efa provider"),
        "The OFI network plugin (aws-ofi-nccl) or AWS's EFA test found no working libfabric "
        "EFA provider on this node: the device is missing from the container, its driver is "
        "not loaded, or the provider cannot reach it; NCCL falls back or fails.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.efa_command_failed",
        rf"{_EFA_DEV}: Failed to (?:process|submit) (?:command|get_feature|set_feature)"
        r"|\befa_counters\b.*\b(?:retrans_timeout|unresponsive_remote|impaired_remote_conn)_events"
        r"_delta=[1-9]",
        ("failed to process", "failed to submit", "efa_counters"),
        "An EFA admin command failed (resource exhaustion or a bad request: not fatal alone), "
        "or the EFA counters of retransmit timeouts and unresponsive peers rose in the window.",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "rdma.port_down",
        r"==> \S+ \(Down\)|state:\s+PORT_DOWN|^\s*State: Down\s*$|Physical state: Polling"
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
        "An InfiniBand/RoCE port is down (ibdev2netdev, ibv_devinfo, ibstat, ibstatus's "
        "'state: 1: DOWN' / 'phys state: 3: Disabled') or the IB tools "
        "cannot read it: collectives over that rail fail or fall back.",
        _nic(S.WARNING, A.CHECK_NETWORK, 0.65),
    ),
    rule(
        "rdma.qp_transition_failed",
        r"Failed to modify QP(?: \d+)? to (?:INIT|RTR|RTS)\b",
        ("failed to modify qp",),
        "An RDMA queue pair could not be connected (the peer did not answer, errno 110, or "
        "was unreachable): the two NICs cannot talk (rail-only fabric, GID or routing).",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
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
        _nic(S.ERROR, A.CHECK_NETWORK, 0.5),
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
        r"|\brdma_bind_addr: (?:Cannot assign requested address|No such device)\b",
        (
            *("no rdma devices", "device-specific driver", "infiniband/roce device", "not found"),
            *("rdma_bind_addr",),
        ),
        "The node shows no usable RDMA device (rdma-core finds none or has no driver for it, "
        "perftest finds no InfiniBand/RoCE device, the device plugin's RDMA device is missing): "
        "the NIC, its driver or its firmware; jobs fall back to sockets or cannot start.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "rdma.no_active_ports",
        # Open MPI's openib BTL (help-mpi-btl-openib.txt: no active ports found)
        r"but there are no active ports detected \(or Open MPI was unable to use",
        ("no active ports detected",),
        "Open MPI found the node's InfiniBand/RoCE device but no active port (cables, the "
        "subnet manager, a link down): the job falls back to TCP or fails.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
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
        _nic(S.ERROR, A.CHECK_NETWORK, 0.5),
    ),
    rule(
        "rdma.verbs_failed",
        r"\bCall to ibv_\w+ failed(?![^\n]*\bretrying \d+/\d+)"
        r"|\b(?:ibv|rdma)_\w+: (?:Invalid argument|Cannot allocate memory)"
        # UCX's `ibv_create_cq(cqe=4096) failed: <errno>`, Open MPI's openib BTL posting a work
        # request (`error posting send request error 12: ...`)
        r"|\bibv_\w+\([^)\n]*\) failed ?: [A-Z]"
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
        r"|Couldn't (?:register (?:GPU )?MR|allocate PD|create (?:CQ|QP)\b)",
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
        ),
        "An RDMA verbs call failed (create/modify a queue pair or CQ, register memory, pin GPU "
        "pages for GPUDirect; perftest's 'Couldn't register MR' / 'Couldn't create QP'): the "
        "NIC, its driver or the peer-memory module, not the job. NCCL's retries (`retrying "
        "1/35`) are not read.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.55),
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
        r"|^\s*(?!SUCCESS)[A-Z][A-Z ]+ERROR status number \d+ for wr_id\b"
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
            *("completion with error on qp", "ib async event"),
        ),
        "An RDMA work request completed with an error (the mlx5 driver's requester or responder "
        "error completion, perftest's 'Completion with error', ParaStation MPI's verbs errors "
        "and broken openib connections): the transfer failed at the NIC "
        "or at its peer (protection, retry exceeded, a remote access error); check both NICs, "
        "the fabric between them and the memory registration.",
        _nic(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
)
