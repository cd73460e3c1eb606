"""NIC driver rules: Mellanox/NVIDIA ConnectX (mlx5), AWS EFA and ENA, the NIC's port and module.

mlx5 patterns come from the development part of the corpus: gpud's infiniband matcher
(insufficient slot power, port module high temperature), NVSentinel's NIC-driver patterns
(command timeouts "Will cause a leak of a command resource", TX/RX timeouts, NETDEV WATCHDOG in
both kernel formats, health poll miss count, a soft lockup inside ``mlx5e_napi_poll``), probe
failures (``mlx5_load_one failed``) and the health-buffer dump (``synd 0x7: irisc not
responding``, ``assert_var``). EFA has no development record (its only source hashed into the
evaluation part); its patterns are the admin-queue and reset messages of the upstream driver
(drivers/infiniband/hw/efa/efa_com.c), the same ones NVSentinel watches, scoped to ``efa``
or ``infiniband`` device prefixes so that ENA's identical texts do not match.

The fabric above the driver (InfiniBand tools, the subnet manager, verbs, UCX, rdma-core and
Open MPI) is read by ``rules_rdma``, whose rules come right after these.
"""

from __future__ import annotations

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"


def nic_fault(severity: S, action: A, confidence: float) -> Verdict:
    """Return a network verdict pointing at the NIC."""
    return verdict(C.NETWORK, INFRA, K.NIC, severity, action, confidence)


# the EFA driver's device prefix, old (`infiniband efa_0:`) and new (`efa 0000:10:1b.0 rdmap16s27:`)
_EFA_DEV = r"(?:infiniband (?:rdmap\w+|efa_\d+)|\befa \S+(?: (?:rdmap\w+|efa_\d+))?)"
_MLX5 = rf"mlx5_core(?:\.\w+)?(?: (?P<pci>{_PCI}))?(?: \S+)?:?"

RECOVERED_BY: dict[str, frozenset[str]] = {"nic.module_error": frozenset({"nic.link_up"})}
PF_RESTRICTED = "nic.pf_access_restricted"
EXPLAINED_BY: dict[str, frozenset[str]] = {"nic.mlx5_cmd_failed": frozenset({PF_RESTRICTED})}
"""A firmware command that failed in an input that says the NIC's functions may not be accessed
(DGX OS's known issue: a monitor reading their registers gets `status bad operation`)."""
"""For a NIC's event, the rules whose finding later in the same input says it ended."""
ONLY_TO_RECOVER = frozenset({"nic.link_up"})
"""Rules that only say an event ended: no finding of their own."""

RULES: tuple[Rule, ...] = (
    rule(
        "nic.carrier_lost",
        # systemd-networkd's word for an interface whose link went down (`ib6: lost carrier`)
        r"\bsystemd-networkd\[\d+\]: [\w.-]+: [Ll]ost carrier\b",
        ("lost carrier",),
        "An interface lost its carrier (systemd-networkd): its link went down, a cable, a port "
        "or the switch; repeated, the link flaps and the collectives over it stall or fail.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.5),
    ),
    rule(
        "nic.port_training_failed",
        r"\bPort Training State Machine failed\b|\blink_downed\b[^\n]{0,40}?\bdelta=[1-9]",
        ("port training state machine", "link_downed"),
        "An InfiniBand port's link went down (its link_downed counter rose; the port's training "
        "state machine failed): the cable, the transceiver or the switch port.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.mlx5_napi_lockup",
        r"mlx5e_(?:napi_poll|poll_\w+)\b|RIP: \S+:mlx5\w*\+0x",
        ("mlx5e_", "rip:"),
        "A CPU stuck in the mlx5 NAPI poll loop (soft lockup in mlx5e_napi_poll): the NIC "
        "driver is wedged and the node's network with it (NVSentinel#1334). Reboot.",
        nic_fault(S.ERROR, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "nic.mlx5_health",
        rf"{_MLX5} .*(?:health compromised|synd 0x[0-9a-f]+:|assert_var\[\d\]|assert_exit_ptr"
        r"|assert_callra|ext_synd|irisc not responding|fatal error|health recovery flow aborted"
        r"|Driver is in error state|handling bad device here|starting teardown"
        # the dump's own header, its field wrapped onto the next line by a mail or a terminal
        r"|print_health_info:\d+:\(pid \d+\):\s*$)",
        ("mlx5_core",),
        "The ConnectX firmware stopped answering the health poll (health buffer dump): the NIC "
        "is down until the driver recovers it or the node reboots.",
        nic_fault(S.ERROR, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "nic.mlx5_cmd_failed",
        rf"{_MLX5} mlx5_cmd_(?:check|out_err):\d+:\(pid \d+\): \w+\(0x[0-9a-f]+\)"
        r"(?: op_mod\(0x[0-9a-f]+\))? failed, status [\w ]+\(0x[0-9a-f]+\)",
        ("mlx5_cmd_check", "mlx5_cmd_out_err"),
        "A ConnectX firmware command the driver sent failed (`CREATE_QP(0x500) ... failed, status "
        "limits exceeded`, `RTR2RTS_QP ... bad parameter`): the NIC refused a queue pair or a "
        "resource the job's RDMA needed; its connections fail next.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        PF_RESTRICTED,
        r"\bAccessing PF\d+(?: and PF\d+)? is restricted\b",
        ("is restricted",),
        "A note that the NIC's physical functions may not be accessed (DGX OS's known issue): "
        "the firmware commands a monitor sends them fail by design (EXPLAINED_BY).",
        verdict(C.BENIGN, B.UNKNOWN, K.NIC, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "nic.mlx5_cmd_timeout",
        rf"{_MLX5} .*(?:\btimeout\. Will cause a leak of a command resource|No done completion"
        r"|cmd_work_handler.*timeout|wait_func\S*:\d+:.*timeout"
        # no free command slot: every command in flight is stuck in the firmware
        r"|cmd_work_handler\S*:\d+:.*failed to allocate command entry)",
        ("mlx5_core",),
        "A ConnectX firmware command timed out (ENABLE_HCA, CREATE_DCT, ...): the NIC's firmware "
        "is stuck; NVSentinel treats it as fatal.",
        nic_fault(S.ERROR, A.REBOOT_NODE, 0.75),
    ),
    rule(
        "nic.mlx_fw_command",
        r"mlx[45]_core \S+: command 0x[0-9a-f]+ failed: fw status = 0x[0-9a-f]+",
        ("mlx4_core", "mlx5_core"),
        "A ConnectX firmware command was refused (mlx4/mlx5 fw status): old or mismatched "
        "firmware; the port may not come up (clustervision/trinity#219: a firmware update "
        "fixed it).",
        nic_fault(S.ERROR, A.HARDWARE_INSPECTION, 0.65),
    ),
    rule(
        "nic.mlx5_probe_failed",
        r"mlx5_core.*(?:mlx5_load_one failed|probe of \S+ failed with error|handle_hca_cap failed"
        r"|mlx5_function_enable.*failed)",
        ("mlx5_core",),
        "The mlx5 driver could not bring the NIC up: the port is unusable (firmware/driver "
        "mismatch or a bad card).",
        nic_fault(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.mlx5_power",
        r"Detected insufficient power on the PCIe slot",
        ("insufficient power on the pcie slot",),
        "The NIC reports too little slot power: it may throttle or drop links (gpud, NVSentinel).",
        nic_fault(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.module_temperature",
        r"Port module event(?:\[\w+\])?.*High Temperature",
        ("port module event",),
        "The NIC's cable/transceiver module is too hot: the link will fail; check cooling and "
        "the module.",
        nic_fault(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "nic.sensor_temperature",
        rf"{_MLX5} temp_warn:\d+:\(pid \d+\): High temperature on sensors",
        ("temp_warn",),
        "The ConnectX ASIC's own sensors report a high temperature (mlx5 events.c): the NIC "
        "throttles or shuts its ports down; check its cooling.",
        nic_fault(S.WARNING, A.HARDWARE_INSPECTION, 0.7),
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
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "nic.link_up",
        rf"{_MLX5} \S+: Link up\s*$",
        ("link up",),
        "A port of the NIC came up: it ends a module event said before it (a cable swapped or "
        "reseated); no finding of its own.",
        nic_fault(S.INFO, A.NONE, 0.5),
    ),
    rule(
        "nic.module_error",
        r"Port module event\[error\]|Port module event: .*(?:unplugged|error)",
        ("port module event",),
        "Any other port module error (cable unplugged, bad module); said once and followed by "
        "the port's link up, a cable swapped (RECOVERED_BY).",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.pause_storm",
        r"\btx_pause_storm_(?:error|warning)_events:\s*[1-9]",
        ("pause_storm",),
        "The NIC detected a PFC pause storm (it kept sending pause frames, mlx5's "
        "`tx_pause_storm_*_events`): a stuck receiver or a congested RoCE fabric stalls traffic.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.65),
    ),
    rule(
        "nic.tx_timeout",
        r"NETDEV WATCHDOG: .*transmit queue \d+ timed out|\bTX timeout detected|\bRX timeout on "
        r"channel|mlx5_core TX timeout",
        ("netdev watchdog", "tx timeout", "rx timeout"),
        "The NIC stopped transmitting or receiving (netdev watchdog / mlx5 TX or RX timeout): "
        "the port or its driver hangs.",
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.7),
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
        nic_fault(S.ERROR, A.REBOOT_NODE, 0.75),
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
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.7),
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
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
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
        nic_fault(S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "nic.efa_command_failed",
        rf"{_EFA_DEV}: Failed to (?:process|submit) (?:command|get_feature|set_feature)"
        r"|\befa_counters\b.*\b(?:retrans_timeout|unresponsive_remote|impaired_remote_conn)_events"
        r"_delta=[1-9]",
        ("failed to process", "failed to submit", "efa_counters"),
        "An EFA admin command failed (resource exhaustion or a bad request: not fatal alone), "
        "or the EFA counters of retransmit timeouts and unresponsive peers rose in the window.",
        nic_fault(S.WARNING, A.CHECK_NETWORK, 0.55),
    ),
)
