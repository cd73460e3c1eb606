"""Devices said to fail in people's words and alerts' names (rules_said reads the rest):

- **gpu.hardware**: a GPU said to vanish (`2 GPUs disappeared in nvidia-smi`, `gone from
  lspci`, `GPU 2 が一覧から消えた`, nvidia-smi that `says GPU lost` or finds it `not
  detected`, `we lost 1 GPU`); an NVLink said inactive or down in other words (`shows
  inactive`, `inactive の まま`, `only has 12 of its 18 NVLinks up`, `NVLink training failed`);
- **gpu.degraded**: an NVLink's error counters said to climb (CRC, replay, recovery: a GPU's
  link, not a switch port's), a row remap said pending;
- **application**: NVML's library and the kernel module said not to match (a half-finished
  upgrade, as rules_driver files NVML's own words); a build said to lack what the site needs
  (`packages were not compiled with a feature we require`, `not compiled with CUDA enabled`);
- **network**: an InfiniBand or RoCE port said to bounce or go down and up (in English,
  Japanese and Korean), the HCA said missing (`ibv_devices` empty), ports stuck initialising
  with no subnet manager, excessive symbol errors, a VM's InfiniBand port said down, an HCA said
  failed or broken;
- **host.hardware**: PCIe errors on the platform told in words (`AER correctable errors ...
  from root port`, a BMC's `PCI Express bus correctable error`, an uncorrectable error on a
  riser), a power supply said to fail (`PSU failure`, `Over current fault`);
- **gpu.oom**: a GPU's memory said exhausted in a sentence (`CUDA out of memory occurs`, `we
  hit a CUDA OOM`): the runtime's own line (rules_cuda) is not in the text.

Guarantees: every rule is judged by happening.live: an alert resolved, a runbook's condition, a
denial just before, a planned, tested, fixed or expected event says nothing now.
"""

from __future__ import annotations

import re

from diagnosis.explain.happening import said
from diagnosis.explain.rules import Rule, host_hardware, host_storage, rule, verdict
from diagnosis.explain.rules_netfs import SHARED_FS
from diagnosis.explain.rules_said import GPU_FAILED_SAID
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_DEGRADED = verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.45)
_MISMATCH = verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.REBOOT_NODE, 0.45)
_BUILT_WITHOUT = verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.45)
_NIC = verdict(C.NETWORK, INFRA, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.45)
_PLATFORM = host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.45)
_STORAGE = host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45)
_GPU_OOM = verdict(C.GPU_OOM, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.5)
_NETFS = (
    rf"(?:{SHARED_FS}|Spectrum\s+Scale|Ceph|ZFS\s+storage"
    r"|scratch(?:\s+storage)?|(?:parallel|shared|network)\s+file\s*system|storage\s+system)"
)
"""A shared filesystem's name in people's words."""

RULES: tuple[Rule, ...] = (
    rule(
        "said.gpu_lost",
        r"\bGPUs?\s*#?\d*\b[^.;?\n]{0,40}?\b(?:disappear(?:s|ed|ing)?|vanish(?:es|ed|ing)?"
        r"|(?:is|was|are|were)\s+gone|gone\s+from|missing\s+from|dropp(?:ed|s|ing)\s+(?:off|out))\b"
        r"|\bnvidia-smi\b[^.;?\n]{0,60}?\b(?:says|reports|shows|returns)\s+(?:that\s+)?(?:the\s+)?"
        r"GPU\s*\d*\s+(?:is\s+)?(?:lost|not\s+detected)\b"
        r"|\bnvidia-smi\b[^.;?\n]{0,30}?\blists\s+only\s+\d+\s+GPUs\b"
        r"|\bthe\s+lost\s+GPU\b"
        # one of the GPUs said to fail (`One of the cluster GPUs is failing, it seems`)
        r"|\b(?:one|two|\d+)\s+of\s+(?:the\s+|our\s+)?(?:\w+\s+)?GPUs\s+(?:is|are|was|were)\s+"
        r"(?:failing|failed|dead|broken|faulty)\b"
        # a count of GPUs said lost (`we lost 1 GPU`, `one GPU is loss after reboot`)
        r"|\blost\s+(?:\d+|one|a|another|two)\s+GPUs?\b|\b(?:one|\d+)\s+GPUs?\s+(?:is|was|are|were)\s+los[st]\b"
        # a node said to miss GPUs (`came up short a GPU`, `nodes are showing missing GPUs`)
        r"|\bcame\s+up\s+short\s+(?:a|one|\d+)\s+GPUs?\b"
        r"|\b(?:showing|shows?|has|have|with)\s+(?:a\s+|\d+\s+)?missing\s+GPUs?\b"
        r"|GPU\s*\d*\s*が(?:一覧から)?(?:消え|見えなくな)"
        # in Chinese (`发现显卡丢失`, `掉卡了`: a card dropped)
        r"|显卡(?:丢失|掉了|不见了)|掉卡",
        ("gpu", "显卡", "掉卡"),
        "A GPU said to have vanished (from nvidia-smi, from lspci, `the lost GPU`): it fell off "
        "the bus or the driver lost it; drain the node and reset or replace the GPU.",
        judge=said(GPU_FAILED_SAID),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.nvlink_down",
        r"\bNVLink\s+\d+\b[^.;?\n]{0,40}?\b(?:shows?|stays?|remains?|still|went|goes|is|was)\s+"
        r"(?:as\s+)?(?:down|inactive)\b"
        r"|\bNVLink\s+\d+\s*が[^。\n]{0,20}?inactive"
        r"|\bonly\s+(?:has\s+)?\d+\s+of\s+(?:its\s+)?\d+\s+NVLinks?\s+(?:up|active)\b"
        r"|\bNVLink\s+training\s+failed\b"
        r"|\blinks?\s+\d+(?:\s*-\s*\d+)?\s+as\s+inactive\b",
        ("nvlink", "links"),
        "One of a GPU's NVLinks said to be inactive or down, or to have failed training: the "
        "GPU's link or the baseboard; collectives over it fail or fall back to PCIe.",
        judge=said(GPU_FAILED_SAID),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.nvlink_errors_rising",
        r"\bNVLink\b[^.;?\n]{0,40}?\b(?:CRC|replay|recovery|flit|data)\s+errors?\b[^.;?\n]{0,40}?"
        r"\b(?:climbing|rising|increasing|going\s+up|keeps?\s+(?:growing|rising)|went\s+from"
        r"|up\s+by|(?:increased|rose|grew|jumped)\s+(?:from|by|to))\b"
        r"|\bNVLINK_(?:CRC|REPLAY|RECOVERY)\w*_ERROR\w*\s+(?:up\s+by|increased\s+by|rose\s+by)\s+\d+",
        ("nvlink",),
        "A GPU's NVLink error counters (CRC, replay, recovery) said to climb: the link "
        "retransmits; the GPU works, degraded, until its link fails.",
        judge=said(_DEGRADED),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.remap_pending",
        r"\brow\s+remap(?:ping)?s?\s+(?:is\s+|are\s+)?pending\b|\bremap(?:ping)?\s+pending\b"
        # retired pages said pending (`pages with ECC errors that are pending retirement`)
        r"|\bpages?\s+(?:\w+\s+){0,5}?(?:(?:that|which)\s+(?:are|is)\s+)?pending\s+retirement\b"
        r"|\brows?\s+remapped\s+for\s+uncorrectable\b|行重映射",
        ("remap", "重映射", "retirement"),
        "A GPU memory row remap said pending (or rows remapped for uncorrectable errors, or "
        "retired pages pending): the GPU works degraded until a reset applies it.",
        judge=said(_DEGRADED),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.built_without",
        r"\b(?:was|were|is|are|been)\s+not\s+(?:compiled|built)\s+with\b"
        r"|\b(?:wasn't|weren't|isn't|aren't)\s+(?:compiled|built)\s+with\b"
        r"|\b(?:compiled|built)\s+without\s+(?:the\s+|a\s+)?(?:\w+\s+)?(?:support|feature)\b"
        r"|\bnot\s+compiled\s+with\s+\w+\s+enabled\b",
        ("compiled", "built"),
        "A build said to lack what the site needs (packages not compiled with a feature, a "
        "framework not compiled with CUDA): the installation, rebuild or reinstall it.",
        judge=said(_BUILT_WITHOUT),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.driver_mismatch",
        r"\bdriver\s+and\s+(?:the\s+)?(?:NVML\s+)?library\s+versions?\s+(?:don't|do\s+not|doesn't)"
        r"\s+match\b|\bdriver/library\s+(?:version\s+)?mismatch\b|드라이버/라이브러리\s*버전\s*불일치",
        ("match", "mismatch", "불일치"),
        "NVML's library and the kernel module said not to match: the driver was upgraded "
        "without its module reloaded; reload the modules or reboot the node.",
        judge=said(_MISMATCH),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.rdma_port",
        # a port that bounces or goes down and up, in English, Japanese and Korean
        r"\b(?:IB|InfiniBand|RoCE|HCA|mlx5_\d+)\b[^.;?\n]{0,40}?\b(?:keeps?\s+bouncing|bounc(?:es|ing)"
        r"|went\s+down\s+and\s+(?:back\s+)?up\s+\d+\s+times)\b"
        r"|リンクダウン\s*/\s*アップを繰り返|끊겼다\s*붙었다"
        # the HCA missing, ports that never leave INIT for want of a subnet manager
        r"|\bibv_devices\W{0,3}\s+(?:prints|shows|returns|gives)\s+(?:an\s+)?empty\b"
        r"|/sys/class/infiniband\s+is\s+empty\b|\bthe\s+HCA\s+is\s+missing\b"
        r"|\bports?\s+(?:are\s+|is\s+)?stuck\s+in\s+(?:Initializ\w+|INIT)\b"
        # ibstat's state said of the ports (`all others had port state "DOWN"`)
        r"|\b(?:had|has|have|with|in)\s+port\s+state\s+[\"'“]?(?:DOWN|Down|INIT|Initializing)\b"
        r"|\bexcessive\s+symbol\s+errors\b"
        r"|\bInfiniBand\s+port\s+(?:of\s+this\s+\w+\s+machine\s+)?is\s+down\b"
        # an HCA said failed or broken (`Infiniband HCA card failed on z0-13`, `IB card problem`)
        r"|\b(?:InfiniBand|IB|HCA)(?:\s+HCA)?\s+cards?\b[^.;?\n]{0,40}?\b(?:failed|broken|dead|died"
        r"|problem)\b|\bbroken\s+(?:InfiniBand|IB)\s+(?:HCA\s+)?card\b"
        # an HCA said to have died, RDMA devices said gone (`a Mellanox HCA that died before
        # sichek started`, `rdma devices disappear after installing OFED`)
        r"|\bHCAs?\s+(?:that\s+)?(?:died|is\s+dead|was\s+dead|went\s+dead)\b"
        r"|\b(?:RDMA|IB|InfiniBand)\s+devices?\s+(?:disappear\w*|vanish\w*|(?:are|is|were|was)\s+"
        r"(?:gone|missing))\b(?!\s+(?:inside|in|from)\s+(?:the\s+|a\s+)?(?:container|pod))"
        # a RoCE NIC that floods pause frames (an alert named for it)
        r"|\bPFC\s*Pause\s*Frames?\s*(?:High|Storm|Flood)\b"
        r"|\bsent\s+[\d.]+\s*[KM]?\s+PFC\s+pause\s+frames\b"
        # the fabric said faulty in Chinese (`IB 网络通信有问题`, `RoCE 网络异常`)
        r"|(?<![A-Za-z0-9])(?:IB|InfiniBand|RoCE|RDMA)\s*网络[^。\n]{0,8}?(?:有问题|故障|异常|报错)",
        (
            *(
                "ib",
                "infiniband",
                "roce",
                "hca",
                "mlx5_",
                "リンク",
                "끊겼다",
                "ibv_devices",
                "stuck",
            ),
            *("pfc", "rdma", "port state"),
        ),
        "An InfiniBand or RoCE port said to bounce, to be down or stuck initialising, the HCA "
        "said missing, or a port with excessive symbol errors: the cable, the transceiver, the "
        "switch port, the subnet manager or the NIC.",
        judge=said(_NIC),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.psu_fault",
        r"\b(?:PSU\s?#?\d*|power\s+supply(?:\s+unit)?)\s+(?:has\s+)?(?:failure|failed|fault)\b"
        r"|\bPSU_[A-Za-z]+\s+fault\b"
        r"|\bOver[\s-]?current\s+fault\b",
        ("psu", "power supply", "current fault"),
        "A power supply said to have failed (a PSU failure, an over-current fault): the node "
        "runs on its redundant supply or loses power; replace the supply.",
        judge=said(_PLATFORM),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.pcie_errors",
        r"\bAER\s+(?:correctable|uncorrectable)\s+errors?\b[^.;?\n]{0,60}?\b(?:root\s+port|from)\b"
        r"|\bPCI\s+Express\s+bus\s+(?:correctable|uncorrectable)\s+error\b"
        r"|\bPCIe\s+uncorrectable\s+error\s+was\s+detected\b",
        ("aer", "pci express", "pcie"),
        "PCIe errors on the platform told in words (AER from a root port, a BMC's bus error, "
        "an uncorrectable error on a riser): the slot, the riser or the board.",
        judge=said(_PLATFORM),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.netfs_failed",
        # a shared filesystem said to fail, as a cluster's status page or its users tell it
        # (`Wynton is currently down due to an unknown issue with the BeeGFS filesystem`,
        # `Issues on CephFS with many queued operations`, `The scratch storage system ... is not
        # performing correctly`, `two ZFS storage targets are still faulty and offline`,
        # `failed to reconnect to CephFS client after MDS server crash`)
        rf"\b(?:issues?|problems?|failures?|outage|trouble)\s+(?:with|on|in)\s+(?:the\s+)?{_NETFS}\b"
        rf"|\bdown\s+due\s+to\s+(?:an?\s+)?(?:\w+\s+){{0,3}}?(?:issue|problem|failure)\s+(?:with|on|in)"
        rf"\s+(?:the\s+)?{_NETFS}\b"
        rf"|\b{_NETFS}(?:\s+(?:storage\s+)?(?:system|servers?|targets?|cluster|file\s*system))?"
        r"\s+(?:which\s+\w+"
        r"\s+\w+\s+)?(?:is|are|was|were)\s+(?:still\s+)?(?:down|faulty|offline|degraded|unavailable"
        r"|not\s+performing\s+correctly|crashed|failing)\b"
        r"|\b(?:MDS|metadata)\s+server\s+crash(?:ed)?\b",
        (
            *("issue", "problem", "failure", "outage", "trouble", "down due", " is ", " are "),
            *("was", "server crash"),
        ),
        "A shared filesystem said to fail or to be down (a cluster's status page, a user's "
        "report: Lustre, GPFS, BeeGFS, CephFS, NFS, the scratch storage): every job that reads "
        "or checkpoints through it stalls or fails.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.kernel_panic",
        # a node's kernel said to panic, the panic's own line not pasted (`the system crash with
        # a kernel panic`, `booting ... leads to kernel panic`, `OS reboot because of kernel
        # panic`)
        r"\b(?:with|to|of|into|in|a|got|get|gets|getting|hit|causes?|caused|see|saw)\s+(?:a\s+)?"
        r"kernel\s+panics?\b|\bkernel\s+panic(?:s|ked)?\s+(?:on|at|after|when|during|every|again"
        r"|upon)\b",
        ("kernel panic",),
        "A node's kernel said to panic (the panic's line not in the text): the node crashed; "
        "its memory, CPU or a driver, to be read from its console.",
        judge=said(_PLATFORM),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.nvml_missing",
        # NVML's library said missing where a daemon needs it (`gpu compute nodes would show up as
        # 'inval' state because the nvml library needed by slurmd was not available`)
        # (a program that needs it named: not a platform's statement, `NVML is not available on
        # macOS`)
        r"\b(?:NVML|libnvidia-ml(?:\.so(?:\.\d+)*)?)(?:\s+library)?\s+(?:needed|required|used)\s+by\s+"
        r"[^.\n]{1,30}?\b(?:was|is|were|are)\s+not\s+(?:available|found|installed|loaded)\b",
        ("nvml", "libnvidia-ml"),
        "NVML's library said missing where a program needs it (slurmd's GPU detection, a device "
        "plugin): the node's driver installation or the program's setup, not a failed GPU.",
        judge=said(_BUILT_WITHOUT),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.gpu_oom",
        r"\b(?:CUDA|GPU)\s+(?:out\s+of\s+memory|OOM)(?:\s+(?:errors?|exceptions?|issues?))?\s+"
        r"(?:occurs|occurred|happens|happened|appears|appeared|(?:is|was)\s+(?:raised|thrown)"
        r"|shows?\s+up|showed\s+up)\b"
        r"|\b(?:got|gets?|getting|hit|hits|hitting|encounter\w*|r[au]ns?\s+into|running\s+into|fac(?:e|es"
        r"|ed|ing)|throws?|threw|raises?|raised)\s+(?:an?\s+|the\s+)?(?:CUDA|GPU)\s+(?:out\s+of\s+memory"
        r"|OOM)\b",
        ("out of memory", "oom"),
        "A GPU's memory said exhausted in a sentence (the runtime's own line not in the text): "
        "the job asks for more GPU memory than is free; lower its batch or spread its model.",
        judge=said(_GPU_OOM),
        flags=re.IGNORECASE,
    ),
)
