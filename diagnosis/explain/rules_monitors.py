"""What fleet monitoring shows: error counters sampled twice, alerts by their names, a switch's
and a bond's view of a link, a job whose progress stopped moving, a Xid or a lost NFS server
named in a person's words.

Read as general shapes, each from the producers' own wording (nvidia-smi nvlink -e, ethtool -S,
perfquery, DCGM's fields, node-exporter's and RoCE alert names, NX-OS and EOS syslog, Linux
bonding, a step counter or heartbeat a monitor watches):

- a counter of errors sampled twice and rising (`Replay Errors: 1203 -> 12845`,
  `rx_crc_errors_phy: 18422 -> 26007`, `SymbolErrorCounter: 1 -> 4123`,
  `DCGM_FI_DEV_ECC_SBE_VOL_TOTAL ... 0 -> 38,412`): NVLink and correctable ECC counters degrade
  the GPU, uncorrectable ones fail it, the link's counters are the network;
- alerts by name: a PFC pause storm and links past the BER threshold are the network; a
  filesystem almost full is the host's storage;
- a switch port down for a link failure, a bonded interface down, are the network (a bond's
  `Link Failure Count` counts since boot: no fault alone);
- a job whose progress stopped moving for minutes (a step counter or heartbeat unchanged, the
  last line written hours ago, the SMs idle while the job runs, the same stacks across dumps,
  every rank's last collective started and none completed) is a hang;
- `Xid 79` said in a sentence takes the Xid catalogue's category as a warning at lower
  confidence (a tool's own line ranks first); an NFS
  mount said not to respond (in the languages the readers know) is the host's storage.

Guarantees: a counter that stays or falls is silent; a counter of zero, a healthy alert (its
`resolved` form), a port that came up, a progress that moves stay silent.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.happening import RESOLVED, less_than_said, live, said
from diagnosis.explain.rules import (
    Judge,
    Rule,
    gpu_hardware,
    host_hardware,
    host_storage,
    rule,
    verdict,
)
from diagnosis.explain.xid_said import XID_SAID, xid_said
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_NETWORK = verdict(C.NETWORK, INFRA, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.5)
_SWITCH = verdict(C.NETWORK, INFRA, K.SWITCH, S.WARNING, A.CHECK_NETWORK, 0.5)
_DEGRADED = verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5)
_FAILED = gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.6)
_STORAGE = host_storage(S.WARNING, A.MONITOR, 0.5)
_NARROW_LINK = host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.5)
_NARROWER_THAN = (
    r"(?<![\w.])(?:x(?:1|2|4|8)\s+(?:instead\s+of|statt|en\s+vez\s+de|au\s+lieu\s+de)\s+x16"
    r"|x(?:1|2|4)\s+(?:instead\s+of|statt)\s+x8|x(?:1|2)\s+(?:instead\s+of|statt)\s+x4)\b"
)
"""A width said below the one the link should have (`x8 instead of x16`)."""


_STALLED = verdict(C.HANG, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45)
_NUMERICAL = verdict(C.NUMERICAL, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.5)
_HOST_MEMORY = verdict(C.HOST_MEMORY, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5)
_SLOW_MEMBER = verdict(C.STRAGGLER, B.UNKNOWN, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5)

# a named error counter, then two samples of it right after its name: `CRC Errors: 88 -> 960`
_RISING = re.compile(
    r"(?P<name>\b(?:Replay\s+Errors|Recovery\s+Errors|CRC\s+Errors|Symbol\w*|rx_crc_errors\w*|"
    r"rx_symbol_err\w*|LinkDowned\w*|link_down\w*|PortRcvErrors|PortXmitDiscards|"
    r"ExcessiveBufferOverrunErrors|DCGM_FI_DEV_ECC_(?:SBE|DBE)\w*|DCGM_FI_DEV_NVLINK_\w*ERROR\w*|"
    r"rx_\w*(?:symbol|crc)\w*|"
    r"(?:single|double)[- ]bit\s+ECC\w*))"
    r"(?:\s+(?:on\s+|for\s+)?[\w-]+(?:\s+(?:GPU\s*)?\d+)?)?\s*[:=]?\.{0,40}\s*"
    r"(?P<a>\d[\d,]*)\s*(?:->|→|=>)\s*(?P<b>\d[\d,]*)",
    re.IGNORECASE,
)


def _rising(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of a counter that rose between two samples, by its name (a counter
    that reset or stayed is silent)."""
    if int(m["b"].replace(",", "")) <= int(m["a"].replace(",", "")):
        return None
    name = m["name"].lower()
    if "dbe" in name or "double" in name:
        return _FAILED
    if "sbe" in name or "single" in name or "ecc" in name or "nvlink" in name:
        return _DEGRADED
    if name.startswith(("replay errors", "recovery errors", "crc errors")):
        return _DEGRADED  # nvidia-smi nvlink -e's own names (a NIC's are rx_crc_errors_phy ...)
    return _NETWORK


def _loss_spike(m: re.Match[str]) -> Verdict | None:
    """Return numerical when the loss at least doubled against its past or its baseline."""
    before = float(m["a"] or m["a2"] or m["a3"])
    after = float(m["b"] or m["b2"] or m["b3"])
    return _NUMERICAL if before > 0 and after >= 2 * before else None


def _clock_low(m: re.Match[str]) -> Verdict | None:
    """Return GPU degradation when the clock is well below its baseline (a fifth or more),
    unless the GPU is idle (an idle GPU drops its clocks by design)."""
    if re.search(r"\bidle\b", m.string, re.IGNORECASE):
        return None
    return _DEGRADED if float(m["now"]) <= 0.8 * float(m["then"]) else None


def _relative_perf(m: re.Match[str]) -> Verdict | None:
    """Return straggler when a detector scores a member's relative performance below 0.9."""
    return _SLOW_MEMBER if float(m["score"]) < 0.9 else None


ALERT_RESOLVED = re.compile(
    r"^\W*\[RESOLVED\]|\"status\"\s*:\s*\"resolved\"|^\s*\*\*Resolved\*\*|\bstatus=resolved\b"
    r"|\bALARM\s*->\s*OK\b",
    re.IGNORECASE,
)
"""An alert's resolved header on any line of the input: the alert the other lines describe (its
labels, its value, one a line) is resolved; the engine drops the monitors' findings."""


def _port_errors_said(m: re.Match[str]) -> Verdict | None:
    """A switch port's or a NIC's errors said to climb, not a GPU's NVLink's (rules_said)."""
    return None if "nvlink" in m.string.lower() or not live(m) else _SWITCH


def _host_said(m: re.Match[str]) -> Verdict | None:
    """The host's memory (an OOM killer's kill) or its storage (a RAID array lost a disk)."""
    if not live(m):
        return None
    return _HOST_MEMORY if "oom" in m[0].lower() else _STORAGE


def _packet_loss(m: re.Match[str]) -> Verdict | None:
    """The network, on packet loss of 1 % or more said as seen (`0% packet loss` is healthy)."""
    pct = m["pct"] or m["pct2"]
    return _NETWORK if float(pct) >= 1 and live(m) else None


def _firing(given: Verdict) -> Judge:
    """A judge that gives `given` unless the line is an alert's resolved form."""

    def judge(m: re.Match[str]) -> Verdict | None:
        return None if RESOLVED.search(m.string) else given

    return judge


RULES: tuple[Rule, ...] = (
    rule(
        "monitor.counter_rising",
        _RISING.pattern,
        ("->", "→", "=>"),
        "An error counter sampled twice that rose (NVLink replays, CRC or symbol errors, links "
        "downed, correctable or uncorrectable ECC): the link or the GPU degrades under the job.",
        judge=_rising,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.network_alert",
        r"PFC\s*Pause\s*Storm\b|\bpause\s+storm\b|\brx_pfc_pause_frames\s+rate\b[^\n]{0,20}?\d[\d.]*\s*[kM]"
        r"|\bexceed\w*\s+the\s+(?:effective\s+)?BER\s+threshold\b"
        r"|%(?:ETHPORT|ETH_PORT|LINK|LINEPROTO)-\d-(?:IF_DOWN\w*|UPDOWN):[^\n]*\b(?:down|failure)\b"
        r"|^\s*MII Status:\s*down\b",
        (
            "pause",
            "pfc",
            "ber threshold",
            "%ethport",
            "%eth_port",
            "%link",
            "%lineproto",
            "mii",
        ),
        "The fabric's monitors say a link misbehaves: a PFC pause storm, links past the BER "
        "threshold, a switch port down for a link failure, a bonded interface down.",
        judge=_firing(_SWITCH),
        flags=re.IGNORECASE | re.MULTILINE,
    ),
    rule(
        "monitor.link_alert",
        r"NVLink\w*Errors?\w*Rising|\bNVLink:\s*\d+\s+(?:CRC|replay|recovery)\s+\w*\s*errors?\s+detected",
        ("nvlink",),
        "An alert or DCGM's health watch says a GPU's NVLink errors rise past their threshold: the "
        "GPU or its NVLink degrades.",
        judge=_firing(_DEGRADED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.fabric_counters",
        r"\b(?:symbol_error_counter|link_error_recovery_counter|link_downed_counter|port_rcv_errors|"
        r"port_xmit_discards)\s*=\s*[1-9]\d*\s*\(threshold"
        r"|^\s*Recommendation\s*:\s*(?!No\s+issue|N/A)\w",
        ("counter", "port_rcv_errors", "port_xmit_discards", "recommendation"),
        "ibdiagnet's counters past their threshold on a port, or mlxlink's recommendation for a "
        "link with an issue (a cable, a transceiver, signal integrity): the fabric.",
        _NETWORK,
        flags=re.IGNORECASE | re.MULTILINE,
    ),
    rule(
        "monitor.filesystem_full",
        r"\bNodeFilesystem(?:AlmostFull|SpaceFillingUp|FilesFillingUp|AlmostOutOfFiles)\b"
        r"|\bfilesystem\s+(?:is\s+)?(?:almost|nearly)\s+full\b|\bpredicted\s+full\s+in\b"
        r"|\bUse%\s*100\s*%|\b100\s*%\s+(?:full|cheio|lleno|plein|voll|pieno|заполнен)|"
        r"\bdisk\s+(?:is\s+)?(?:completely\s+)?full\b"
        # in Japanese and Chinese (`hdd の空きスペースがなくなった`, `磁盘空间不足`,
        # `ディスクがいっぱい`)
        # (not as a condition: `場合`, `前に`, `たら`, `如果 ... 的话`)
        r"|(?:空き(?:スペース|容量|領域)が(?:なくなっ|無くなっ|不足)"
        r"|ディスク(?:容量)?が(?:いっぱい|一杯|不足)(?!(?:では|で|じゃ)?(?:ない|なく|ありません)))"
        r"(?![^。\n]{0,12}?(?:場合|前に|たら|なら))"
        r"|(?<!如果)(?<!若)(?:磁盘|硬盘)(?:空间)?(?:不足|已满|满了)(?![^。，,\n]{0,6}的话)",
        (
            *("空き", "ディスク", "磁盘", "硬盘"),
            "nodefilesystem",
            "almost full",
            "nearly full",
            "predicted full",
            "use%",
            "full",
            "cheio",
            "lleno",
            "plein",
            "voll",
            "pieno",
            "заполнен",
        ),
        "A filesystem of the node is (almost) full: writes of checkpoints and logs fail next.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.progress_stalled",
        r"\b(?:train_step\w*|step(?:_total|\s+counter)?|progress|heartbeat\w*|iteration\w*)\b[^.\n]{0,40}?"
        r"\b(?:unchanged|not\s+(?:updated|incremented|advanced))\s+for\s+\d+\s*(?:s|secs?|m|min\w*|h\w*)\b"
        r"|\blast\s+(?:line|log\s+line|step|log)\b[^\n]{0,60}?\bwritten\s+\d+\s*(?:h|hours?|m|min\w*)\s+ago\b"
        r"|SM_ACTIVE\s*=\s*0\b[^.\n]{0,60}?\bfor\s+\d+\s*(?:m|min\w*|h)\b"
        r"|\b(?:identical|unchanged)\b[^.\n]{0,40}?\bacross\s+\d+\s+dumps\b"
        r"|\bnone\s+completed\b[^.\n]{0,60}?\b\d+\s*(?:m|min\w*|h)\s+old\b",
        (
            "unchanged",
            "not updated",
            "not incremented",
            "not advanced",
            "written",
            "sm_active",
            "dumps",
            "none completed",
        ),
        "A monitor shows the job's progress stopped moving for minutes (a step counter or "
        "heartbeat unchanged, the last line hours old, the SMs idle, the same stacks across "
        "dumps, every rank's last collective started and none completed): a hang.",
        judge=_firing(_STALLED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.loss_spike",
        r"\b(?:train_)?loss\b(?![\s_-]*scal)[^.\n]{0,20}?\b(?:jumped|spiked|shot\s+up|went|rose|exploded)\s+"
        r"(?:from\s+)?"
        r"~?(?P<a>\d+(?:\.\d+)?)\s*(?:to|->|→)\s*~?(?P<b>\d+(?:\.\d+)?)"
        r"|\bloss\b(?![\s_-]*scal)[^.\n]{0,20}?\b(?:spiked|jumped|rose|went|shot)\s+(?:up\s+)?to\s+~?"
        r"(?P<b3>\d+(?:\.\d+)?)\s+from\s+~?(?P<a3>\d+(?:\.\d+)?)"
        r"|\b(?:train_)?loss\s*[=:]\s*(?P<b2>\d+(?:\.\d+)?)\s*\((?:\d+\s*d\s+)?(?:median|avg|mean|baseline)\s+"
        r"(?P<a2>\d+(?:\.\d+)?)",
        ("loss",),
        "The loss at least doubled against its past or its baseline (a spike that stays): the "
        "recipe, the data or a silent corruption; check the grad norm and the batch.",
        judge=_loss_spike,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.gpu_below_baseline",
        r"SM_CLOCK\s*[=:]\s*(?P<now>\d+)\s*MHz\s*\((?:fleet\s+)?baseline\s+(?P<then>\d+)",
        ("sm_clock",),
        "A GPU's clock far below its fleet's baseline under load: the GPU throttles.",
        judge=_clock_low,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.pcie_downgraded",
        r"\bLnkSta:[^\n]*\bWidth\s+x\d+\s*\(downgraded\)"
        # GPU-Z's bus interface (`PCIe x16 4.0 @ x4 4.0`: the width a GPU's link trained at; an
        # idle GPU lowers only its generation)
        r"|\bPCIe x16 [\d.]+ @ x(?:1|2|4|8) [\d.]+|\bPCIe x8 [\d.]+ @ x(?:1|2|4) [\d.]+"
        # the same said in words, or by a report (`degraded link (x8 instead of x16)`, `x4
        # lanes negotiated (GPU max x16)`)
        r"|\b(?:link|lanes?|width|running|trained|PCIe)\b[^.\n]{0,40}?\(?"
        rf"{_NARROWER_THAN}"
        r"|(?<![\w.])x(?:1|2|4|8)\s+lanes?\s+negotiated\s*\([^)\n]{0,20}?\bmax\s+x16\b"
        r"|(?<![\w.])x(?:1|2|4)\s+lanes?\s+negotiated\s*\([^)\n]{0,20}?\bmax\s+x8\b"
        # a width said against the one it should have (`at x8 since the riser swap, it should
        # be x16`), nvidia-smi -q's two widths retold (`Link Width Max 16x, Current 4x`)
        r"|\bat\s+x(?:1|2|4|8)\b[^.\n]{0,40}?\bshould\s+be\s+x16\b"
        r"|\bMax\s+16x,?\s+Current\s+(?:1|2|4|8)x\b"
        # Dell's UEFI at POST (`UEFI0080: PCIe link speed is not optimal for Bus:201 D:1 F:0.
        # Expected link speed is Gen5 but actual link speed is Gen1`)
        r"|\bPCIe link (?:speed|width) is not optimal for Bus:\s*\d+",
        (
            *("lnksta", "instead of x", "negotiated", " @ x", "statt x", " de x", "should be x"),
            *("max 16x", "is not optimal"),
        ),
        "lspci's link status: a PCIe link trained narrower than it can (a riser, a slot, a "
        "cable or the device): the host's hardware, the GPU's where the line names one; a lower "
        "speed alone is an idle device saving power, by design.",
        _NARROW_LINK,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.relative_perf",
        r"(?:\b|_)(?:rel(?:ative)?_?perf(?!\w*threshold)\w*|relative\s+performance(?:\s+score)?)\s*[=:]\s*"
        r"(?P<score>0?\.\d+|1\.0+)\b",
        ("rel_perf", "relative_perf", "relperf", "relative perf"),
        "A straggler detector's relative performance of one member below 0.9 of its peers.",
        judge=_relative_perf,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.xid_said",
        XID_SAID.pattern + r"(?!\s*(?:was|were|is)\s+(?:ruled|not))",
        ("xid",),
        "A Xid named in a person's words: the Xid catalogue's category, as a warning of lower "
        "confidence than the driver's own line (which ranks first when both are given).",
        judge=xid_said,
        flags=re.IGNORECASE,
    ),
    # an incident told in people's words and alerts' names (what on-call writes in a ticket)
    rule(
        "monitor.packet_loss",
        r"\b(?P<pct>\d+(?:\.\d+)?)\s*%\s+packet\s+loss\b"
        r"|\bpacket\s+loss\s+(?:is|of|at|was)\s+(?P<pct2>\d+(?:\.\d+)?)\s*%",
        ("packet loss",),
        "Packet loss between the nodes (ping's figure, 1 % or more): a link, a NIC or a bond "
        "member that drops traffic; collectives time out or crawl.",
        judge=_packet_loss,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.link_errors_said",
        r"\b(?:symbol|CRC|link|rcv|receive|port)\s+errors?(?:\s+counters?)?(?:\s+(?:on|of|for)\s+\S+)?\s+"
        r"(?:are\s+|keep\s+|keeps\s+)?"
        r"(?:going\s+up|climbing|rising|increasing)\b|\bib_port_\w*errors?\w*\s*>"
        # a switch or NIC port that flaps (not a probe's or a service's `port 8080`)
        r"|\b(?:port\s+(?!\d{2,5}\b)\S+|Eth\S+|swp\d+|ib\d+|mlx5_\d+)[^.\n]{0,30}?\bflap(?:s|ping|ped)?\b|(?:端口|链路)[^。\n]{0,12}?(?:频繁|反复|不停)\s*(?:down\s*/\s*up"
        r"|up\s*/\s*down|闪断|抖动|up\s*down)",
        ("error", "ib_port_", "flap", "端口", "链路"),
        "A link's error counters said to climb, a port said to flap, an alert on port errors: "
        "the cable, the transceiver or the switch port.",
        judge=_port_errors_said,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.link_below_rate",
        r"\b(?:trained|negotiated|running|linked|came\s+up|comes\s+up|is)\s+(?:at\s+)?(?P<have>\d+)\s*G"
        r"(?:bps|b/s|bit/s|bE|b)?\b[^.\n]{0,20}?\b(?:instead\s+of|rather\s+than|not)\s+(?P<want>\d+)\s*G"
        r"(?:bps|b/s|bit/s|bE|b)?\b"
        r"|\bonly\s+(?P<have2>\d+)\s+of\s+(?:the\s+)?(?P<want2>\d+)\s+(?:efa|ib|infiniband|hca|nic|mlx5|rdma)\s+"
        r"(?:devices|ports|nics|hcas|links|interfaces)\b",
        ("instead of", "rather than", " not ", "only "),
        "A NIC port trained below its rate (100G instead of 400G) or fewer of the node's RDMA "
        "devices present than it has: the node moves data at a fraction of its peers' speed.",
        judge=less_than_said(_NETWORK),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.gpu_said_degraded",
        r"\b(?:PCIe\s+Gen\s?|PCIe\s+|Gen\s?)(?P<have>\d)(?:\.0)?\b[^.\n]{0,12}?(?:instead\s+of|en\s+vez\s+de"
        r"|statt|au\s+lieu\s+de|em\s+vez\s+de|invece\s+di|вместо|rather\s+than)\s+(?:PCIe\s+)?(?:Gen\s?)?"
        r"(?P<want>\d)(?:\.0)?\b",
        ("gen", "pcie"),
        "A GPU's PCIe link said to run at a lower generation than it should (not idle power "
        "saving: said against the one it should have): the GPU moves data slower.",
        judge=less_than_said(_DEGRADED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.gpu_signs_said",
        r"\breason=(?:HW_POWER_BRAKE|HW_SLOWDOWN|HW_THERMAL_SLOWDOWN|SW_THERMAL_SLOWDOWN)\b"
        # (not an alert rule's own definition: `fire ... when DCGM reports reason=...`)
        r"|\b(?:correctable|single-bit|SBE)\b[^.\n]{0,40}?\b(?:climbing|rising|increasing|going\s+up"
        r"|and\s+rising)\b",
        ("reason=", "correctable", "single-bit", "sbe"),
        "An alert's clock reason of a hardware slowdown or power brake, or correctable ECC errors "
        "said to climb: the GPU works, degraded, and is on its way to fail.",
        judge=said(_DEGRADED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.gpu_fan_failed",
        # a GPU's fan said to fail (`a GPU card was failing with fan Error`, `fan failure on GPU 2`)
        # (not denied, not a feature's name: `no fan error reported`, `fan failure detection`)
        r"\b(?:GPU|graphics\s+card|video\s+card)s?\b[^.\n]{0,40}?\b(?:failing\s+with\s+(?:an?\s+)?)?"
        r"(?<!\bno\s)(?<!\bwithout\s)fans?\s+(?:error|failure|fault|failed|broken|dead)\b"
        r"(?!\s+(?:detection|check\w*|monitor\w*|threshold|alert\w*|handling))"
        r"|(?<!\bno\s)\bfans?\s+(?:error|failure|fault)\s+(?:on|of)\s+(?:the\s+|a\s+|one\s+)?GPU\b",
        ("fan",),
        "A GPU's fan said to have failed: the GPU overheats and throttles, then fails; replace "
        "the card or its fan.",
        judge=said(_FAILED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.gpu_bandwidth_check",
        # Azure's node health checks (aznhc): a GPU's copy bandwidth under the check's floor
        # (`check_gpu_bw: P2P test on GPU 1 to GPU 0 failed. Bandwidth 162.45 is less than 335`)
        r"\bHealth check failed:\s+check_gpu_bw:[^\n]*?\bBandwidth\s+[\d.]+\s+is\s+less\s+than\b",
        ("check_gpu_bw",),
        "A node health check measured a GPU's copy bandwidth (NVLink peer to peer, host to "
        "device) under its floor: the GPU's links are degraded; drain the node and inspect them.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.ERROR, A.HARDWARE_INSPECTION, 0.65),
    ),
    rule(
        "monitor.host_memory_low",
        # Ray's status block (`Memory usage on this node: 7.4/7.5 GiB: ***LOW MEMORY*** less than
        # 10% of the memory on this node is available for use`)
        r"\*\*\*LOW MEMORY\*\*\* less than \d+% of the memory on this node is available",
        ("low memory",),
        "Ray says the node's memory is nearly exhausted: its workers are the next the OOM killer "
        "takes; lower their memory or the object store.",
        verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.55),
    ),
    rule(
        "monitor.fabric_port_check",
        # LBNL NHC's InfiniBand and Ethernet checks (`check_hw_ib:  No IB port hfi1_0:1 is ACTIVE
        # (LinkUp 100 Gb/sec)`): the node's fabric port is not up at the rate it should be
        r"\bHealth check failed:\s+check_(?:hw_ib|hw_eth|ib_bw\w*):",
        ("check_hw_ib", "check_hw_eth", "check_ib_bw"),
        "A node health check found the node's InfiniBand or Ethernet port not active at its "
        "rate, or its bandwidth under the floor: the node's link; the check drains it.",
        verdict(C.NETWORK, INFRA, K.NIC, S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
    rule(
        "monitor.nvlink_said_down",
        r"\bNVLink\w*Down\b|\bnvlink\b[^.\n]{0,40}?\blinks?\s+\d+\s+(?:is\s+)?(?:inactive|down)\b"
        r"|\bNVLink\s+\d+\b[^.\n]{0,30}?\bis\s+(?:down|inactive)\b"
        r"|\bLink\s+\d+\s*(?::|是|は|가)\s*<inactive>",
        ("nvlink", "<inactive>"),
        "An alert or a person says one of a GPU's NVLinks is down or inactive: the GPU's links "
        "fail; collectives over it fail or crawl.",
        judge=said(_FAILED),
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.host_said",
        r"\bkilled\s+by\s+(?:the\s+)?(?:kernel(?:'s)?\s+)?OOM[- ]?killer\b|\bOOM[- ]killed\b"
        r"|(?<!\b0\s)\boom-kill\s+events?\b(?!\s*[:=]\s*0\b)"
        r"|\bmd_raid_degraded\b|\b\d+\s+of\s+\d+\s+disks?\s+failed\b",
        ("oom", "md_raid_degraded", "disks failed", "disk failed"),
        "The host's memory said exhausted (killed by the OOM killer) or a RAID array said to have "
        "lost a disk, in a ticket's or an alert's words.",
        judge=_host_said,
        flags=re.IGNORECASE,
    ),
    rule(
        "monitor.nfs_unresponsive",
        r"(?<!\bif )\bNFS\b[^.;,\n]{0,40}?(?:\bnot\s+respond\w*|"
        r"\bstopped\s+(?:answering|responding)|"
        r"\bunreachable\b|\bnon\s+risponde|\bno\s+responde|\bnão\s+responde|"
        r"\bantwortet\s+nicht|\bne\s+répond\s+plus|не\s+отвечает|無応答|没有响应|无响应)",
        ("nfs",),
        "An NFS mount said not to respond: the data loading waits on its server.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
)
