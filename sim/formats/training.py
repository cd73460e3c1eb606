"""Training-loop log lines: Megatron-LM's iteration line, fp16 overflow skips and NaN reports.

- ``training_log`` of NVIDIA/Megatron-LM (megatron/training/training.py): the format strings
  ``' iteration {:8d}/{:8d} |'``, ``' consumed samples: {:12d} |'``, ``' elapsed time per
  iteration (ms): {:.1f} |'``, ``' learning rate: {:.6E} |'``, ``' global batch size: {:5d} |'``,
  ``' {key}: {:.6E} |'``, ``' loss scale: {:.1f} |'``, ``' grad norm: {:.3f} |'``,
  ``' number of skipped iterations: {:3d} |'``, ``' number of nan iterations: {:3d} |'``. Current
  Megatron-LM starts the line with `` [YYYY-mm-dd HH:MM:SS]``; older forks print no time, a
  ``{:.3E}`` learning rate and only losses above zero (real_logs nan-loss, Megatron-LLM). The
  BLOOM (Megatron-DeepSpeed) lines of real_logs loss-spike use other fields and are not produced.
- Megatron-LM's ``save_checkpoint`` (megatron/training/checkpointing.py), rank 0:
  ``'saving checkpoint at iteration {:7d} to {} in {} format'`` when it starts and
  ``'  successfully saved checkpoint from iteration {:7d} to {} [ t {}/{}, p {}/{} ]'`` when every
  rank's shard is written (tests/fixtures/readers/checkpoint_log_lines.txt has real ones).
- DeepSpeed's fp16 ``OVERFLOW! Rank 0 Skipping step`` (real_logs nan-loss, DeepSpeed loss_scaler)
  and the fatal ``Current loss scale already at minimum`` exception.
- Megatron's NaN checks: ``***WARNING*** Bad grad_norm detected`` (real_logs nan-loss,
  Megatron-LLM) and Megatron-LM 0.7's grad-buffer assertion (public_lines megatron-nan-grad-norm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sim.formats.traceback import PyFrame, python_traceback


@dataclass(frozen=True)
class MegatronIteration:
    """The values one Megatron ``training_log`` line reports (over the last log interval)."""

    iteration: int
    train_iters: int
    consumed_samples: int
    elapsed_ms: float
    learning_rate: float
    global_batch_size: int
    losses: Mapping[str, float] = field(default_factory=dict)
    loss_scale: float = 1.0
    grad_norm: float | None = None
    skipped: int = 0
    nan: int = 0
    throughput_tflops: float | None = None


def megatron_iteration_line(step: MegatronIteration, ts: datetime | None = None) -> str:
    """Return the line; with `ts` in current Megatron-LM's form, without it as older forks print."""
    s = step
    text = f" [{ts:%Y-%m-%d %H:%M:%S}]" if ts is not None else ""
    text += f" iteration {s.iteration:8d}/{s.train_iters:8d} |"
    text += f" consumed samples: {s.consumed_samples:12d} |"
    text += f" elapsed time per iteration (ms): {s.elapsed_ms:.1f} |"
    if s.throughput_tflops is not None:
        text += f" throughput per GPU (TFLOP/s/GPU): {s.throughput_tflops:.1f} |"
    lr_format = ".6E" if ts is not None else ".3E"
    text += f" learning rate: {s.learning_rate:{lr_format}} |"
    text += f" global batch size: {s.global_batch_size:5d} |"
    for key, value in s.losses.items():
        text += f" {key}: {value:.6E} |"
    text += f" loss scale: {s.loss_scale:.1f} |"
    if s.grad_norm is not None:
        text += f" grad norm: {s.grad_norm:.3f} |"
    text += f" number of skipped iterations: {s.skipped:3d} |"
    text += f" number of nan iterations: {s.nan:3d} |"
    return text


def megatron_checkpoint_lines(
    iteration: int, path: str, tp: int = 1, pp: int = 1, ckpt_format: str = "torch_dist"
) -> list[str]:
    """Return rank 0's lines for one checkpoint save: its start and its end."""
    return [
        f"saving checkpoint at iteration {iteration:7d} to {path} in {ckpt_format} format",
        f"  successfully saved checkpoint from iteration {iteration:7d} to {path} "
        f"[ t 1/{tp}, p 1/{pp} ]",
    ]


def deepspeed_log_prefix(ts: datetime, level: str, source: str) -> str:
    """Return DeepSpeed's logger prefix ``[2023-06-07 22:20:23,340] [INFO] [file.py:181:func] ``."""
    return f"[{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}] [{level}] [{source}] "


def deepspeed_overflow_line(ts: datetime, rank: int, attempted: int, reduced: int) -> str:
    """Return DeepSpeed's fp16 dynamic loss-scale overflow skip."""
    prefix = deepspeed_log_prefix(ts, "INFO", "loss_scaler.py:181:update_scale")
    return (
        f"{prefix}[deepspeed] OVERFLOW! Rank {rank} Skipping step. Attempted loss scale: "
        f"{attempted}, reducing to {reduced}"
    )


def loss_scale_at_minimum_line() -> str:
    """Return the exception that ends a run whose loss scale collapsed."""
    return (
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
        "Exiting run."
    )


def bad_grad_norm_warning(grad_norm: str = "nan") -> str:
    """Return Megatron-LLM's skip warning for a non-finite gradient norm."""
    return f"***WARNING*** Bad grad_norm detected (grad_norm={grad_norm})"


NAN_GRAD_NORM_FRAMES: tuple[PyFrame, ...] = (
    PyFrame(
        "/home/Megatron-LM/megatron/core/distributed/param_and_grad_buffer.py",
        151,
        "finish_grad_sync",
        "self.start_grad_sync()",
    ),
    PyFrame(
        "/home/Megatron-LM/megatron/core/distributed/param_and_grad_buffer.py",
        114,
        "start_grad_sync",
        "assert not norm.isnan(), (",
    ),
)
"""The innermost frames of the Megatron-LM 0.7 assertion (public_lines megatron-nan-grad-norm)."""


def nan_grad_norm_lines(rank: int, device: int, node: str) -> list[str]:
    """Return the traceback tail of Megatron-LM's NaN-in-grad-norm assertion."""
    message = (
        f"AssertionError: Rank {rank}: found NaN in local grad norm in backward pass before "
        f"data-parallel communication collective. Device: {device}, node: {node}"
    )
    return python_traceback(NAN_GRAD_NORM_FRAMES, message)
