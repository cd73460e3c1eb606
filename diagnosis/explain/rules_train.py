"""Training-loop rules (NaN, loss scaling, iteration lines) and the fallbacks tried last.

Patterns come from real lines: real_logs nan-loss (Megatron-LLM ``Bad grad_norm detected``,
DeepSpeed ``OVERFLOW!`` and ``loss scale already at minimum``), loss-spike and
perf-degradation-slow-gpu (iteration lines), public_lines megatron-nan-grad-norm,
torchrun-child-failed and elastic-failed-*, and Python's own exception-line shape.
"""

from __future__ import annotations

import re

from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.explain.training import STEP_TIME, judge_iteration, judge_step_time
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S
from ingest.readers.train_log import MEGATRON

APP, UNSURE = B.APPLICATION, B.UNKNOWN


NONFINITE_NORM_RULE = "training.nonfinite_grad_norm"
FINITE_GRAD_NORM = re.compile(r"\bgrad[ _]norm['\"]?\s*[:=]\s*\d", re.IGNORECASE)
"""A later line's finite gradient norm: a NaN/inf norm seen once before it was a step the loss
scaler skipped (fp16's warm-up), not a run that diverged (the engine drops that finding)."""

ANSWERED_NORMAL = "training.answered_normal"

NUMERICAL_RULES: tuple[Rule, ...] = (
    rule(
        ANSWERED_NORMAL,
        # a reply of its own sentence (`May I ask if this is normal?` ... `It's normal. If the
        # loss becomes nan, it's abnormal.`)
        r"(?:^|(?<=[.!?]\s))[^\w\n]*(?:it's|it\s+is|this\s+is|that's|that\s+is)\s+"
        r"(?:(?:quite|perfectly|totally|completely)\s+)?normal\s*[.!](?=\s|$)",
        ("normal",),
        "A reply that calls what the input asks about normal (`It's normal.`): a NaN or inf "
        "gradient norm now and then is a step the loss scaler skipped, no divergence "
        "(EXPLAINED_BY); a NaN loss is not answered away.",
        verdict(C.BENIGN, UNSURE, K.JOB, S.INFO, A.NONE, 0.5),
        flags=re.IGNORECASE | re.MULTILINE,
    ),
    rule(
        "training.loss_scale_min",
        # DeepSpeed's words, fairseq's (`FloatingPointError: Minimum loss scale reached`)
        r"loss scale already at minimum|\b[Mm]inimum loss scale (?:\([\d.e-]+\) )?reached\b"
        # GPT-NeoX's overflow monitor (`Skipped 50 iterations in a row due to Overflow`)
        r"|\bSkipped \d+ iterations in a row due to Overflow\b",
        ("loss scale already at minimum", "minimum loss scale", "in a row due to overflow"),
        "fp16 loss scaling collapsed after repeated overflows: the run cannot continue "
        "(real_logs nan-loss). Numerical, the job's recipe (lr, precision, data).",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.9),
    ),
    rule(
        "training.loss_nonfinite",
        # detectron2's anomaly check (`FloatingPointError: Loss became infinite or NaN at
        # iteration=2137!`)
        r"\bLoss became infinite or NaN at iteration=?\s*\d+",
        ("loss became infinite or nan",),
        "The trainer's anomaly check stopped on a loss that became infinite or NaN: numerical "
        "(the learning rate, the batch, the data); the run aborts.",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.85),
        flags=re.IGNORECASE,
    ),
    rule(
        "training.nan_grad_norm",
        r"(?:Rank (?P<rank>\d+): )?found NaN in local grad norm"
        r"(?:.*?Device: (?P<gpu>\d+), node: (?P<host>[\w.-]+))?",
        ("found nan",),
        "Megatron's NaN check fired in the backward pass: numerical (rarely silent data "
        "corruption on one GPU; the Device/node in the message say where).",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.9),
    ),
    rule(
        "training.loss_scale_stuck",
        # (at 1, or collapsed to 0: `Attempted loss scale: 0.0, reducing to 0.0`)
        r"Attempted loss scale: ([01])(?:\.0)?, reducing to \1\b|Reducing dynamic loss scale from "
        r"([01])(?:\.0)? to \2\b"
        # a scale halved below 1 (apex's `reducing loss scale to 3.329995865487836e-257`)
        r"|\breduc(?:ing|ed)\s+(?:dynamic\s+)?loss\s+scale\s+(?:from\s+\S+\s+)?to\s+"
        r"(?:0\.\d+|\d(?:\.\d+)?[eE]-\d+)\b",
        ("loss scale",),
        "fp16 dynamic loss scaling is already at 1 and still overflowing: every step is "
        "skipped, the model stops learning (DeepSpeed#697). Numerical.",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.8),
    ),
    rule(
        "training.bad_grad_norm",
        r"Bad grad_norm detected \(grad_norm=(?:nan|inf|-inf)\)",
        ("bad grad_norm",),
        "A non-finite grad norm made the trainer skip a step: a NaN, so numerical, but the run "
        "continues; warning, monitor.",
        verdict(C.NUMERICAL, APP, K.JOB, S.WARNING, A.MONITOR, 0.7),
    ),
    rule(
        "training.overflow_skip",
        r"OVERFLOW! Rank (?P<rank>\d+) Skipping step",
        ("overflow!",),
        "DeepSpeed's fp16 dynamic loss scaling skipping a step: the mechanism working, benign "
        "unless the scale reaches its minimum.",
        verdict(C.BENIGN, UNSURE, K.JOB, S.INFO, A.NONE, 0.8),
    ),
    rule(
        "training.iteration",
        MEGATRON.pattern,
        ("iteration",),
        "A Megatron iteration line: benign, numerical when its loss or grad norm is NaN/inf or "
        "it counts NaN iterations. Consecutive lines also feed the loss-spike (numerical) and "
        "step-slowdown (straggler) checks.",
        judge=judge_iteration,
    ),
    rule(
        NONFINITE_NORM_RULE,
        r"\bgrad[ _]norm['\"]?\s*[:=]\s*[-+]?(?:nan|inf)\b"
        # a metrics line of `name value` pairs (`model_grad_norm nan / value_grad_norm 40.3`)
        r"|(?:\b|_)grad_norm\s+[-+]?(?:nan|inf)\s*(?:[/|,;\n]|$)",
        ("grad",),
        "A NaN/inf gradient norm outside a whole iteration line (a wrapped line, a logger's "
        "own field): numerical.",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.MONITOR, 0.7),
        flags=re.IGNORECASE,
    ),
    rule(
        "training.nan_loss",
        r"\bloss(?: is|:|=)\s*(?:nan|inf)\b|returned nan values"
        # (one optional word between two runs of spaces: `\s*(?:word\s*)?`, so a long run of
        # spaces is read once, not once per split)
        r"|\bloss\b(?![\s_-]*scal)\s*(?:(?:=|:|\||is|became|becomes|went\s+to|goes\s+to|going\s+to"
        r"|turned|se\s+volvió|passe\s+à|"
        r"devient|wird|wurde|становится|stała\s+się|变成|为|が|가|는)\s*)?(?:nan|inf)(?![A-Za-z0-9])"
        # a trainer's own loss field (`loss_net: nan`), PyTorch's printed tensor (`loss
        # tensor(nan, device='cuda:0')`)
        r"|\bloss_(?!scal)\w+:\s*(?:nan|inf)\b|\bloss\s+tensor\(\[?(?:nan|inf)\b"
        # in Chinese with a word between (`Loss 突然变成了 NaN`, `Loss变为NaN`)
        r"|(?<![A-Za-z])loss\s*(?:(?:突然|会|就|又|直接)\s*)?(?:变成了?|变为|成了|出现了?)\s*(?:nan|inf)"
        r"(?![A-Za-z0-9])",
        ("loss", "nan values"),
        "A loss reported as NaN/inf outside a Megatron iteration line (`loss = nan`, `| loss nan "
        "|`, `loss became NaN`), never a loss scale's.",
        verdict(C.NUMERICAL, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7),
        flags=re.IGNORECASE,
    ),
    rule(
        "training.step_time",
        STEP_TIME.pattern,
        (
            *(
                f"{word}{sep}{verb}"
                for word in ("iteration", "iter", "step", "batch")
                for sep in (" ", "_")
                for verb in ("took", "time")
            ),
            "time this",
            "time per",
            "time of",
            *("time delta", "elapsed", "duration", "time taken", "epoch time", "step time"),
        ),
        "A line that reports one step's duration (any framework): healthy on its own; "
        "consecutive lines feed the generic step-slowdown (straggler) check.",
        judge=judge_step_time,
        flags=re.IGNORECASE,
    ),
)

EXPLAINED_BY: dict[str, frozenset[str]] = {
    NONFINITE_NORM_RULE: frozenset({ANSWERED_NORMAL}),
    "training.bad_grad_norm": frozenset({ANSWERED_NORMAL}),
}
"""A gradient norm's NaN that a reply in the same input calls normal: a skipped step."""

FALLBACK_RULES: tuple[Rule, ...] = (
    rule(
        "elastic.child_failed",
        r"ChildFailedError|failed \(exitcode: -?\d+\) local_rank: (?P<rank>\d+)",
        ("childfailederror", "failed (exitcode"),
        "torchrun reports that a rank exited: a consequence; the cause is in that rank's log.",
        verdict(C.UNKNOWN, UNSURE, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.3),
    ),
    rule(
        "python.exception",
        # (not Lustre's kernel lines, `LNetError: 4069:0:(lib-ptl.c:189:...)`: rules_netfs')
        r"^(?!(?:LNet|Lustre)Error:)"
        r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*Error|(?:[A-Z]\w*)?Exception)(?::\s|:?\s*$)",
        ("error", "exception"),
        "A Python exception no earlier rule explains (KeyError, ValueError, ...): the job's code. "
        "Confidence is higher when it ends a traceback.",
        verdict(C.APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.4),
        traceback_boost=0.2,
    ),
)
