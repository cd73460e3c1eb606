"""``py-spy dump`` output for a rank, and the stacks a hang leaves behind.

The text follows py-spy's ``src/dump.rs``: ``Process {pid}: {cmdline}``, ``Python v{version}
({exe})``, a blank line, then per thread ``Thread {id} ({active|idle|active+gil}): "{name}"``
(no ``: "name"`` when the thread is unnamed) and frames ``    {function} ({file}:{line})``. On
Linux ``{id}`` is the native thread id (decimal; the main thread's equals the pid); without one
py-spy prints the Python thread ident as Rust's ``{:#X}``, e.g. ``0x7F1C2A3B4740``.

The canonical stacks are copied frame for frame from real dumps: the BLOOM-176B eval hang
(real_samples/pyspy_hang_dump_bloom176b_eval_deadlock.txt: peers in ``broadcast``/``all_reduce``
/``recv``, the culprit in the DataLoader) and a DeepSpeed ZeRO-3 hang with the main thread in
``backward`` (huggingface/accelerate#3104), used here as the "in compute" stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PyspyFrame = tuple[str, str, int]
"""(function, short file name, line); line 0 prints without ``:line``."""

ThreadStatus = Literal["active", "idle", "active+gil"]

_TAIL: tuple[PyspyFrame, ...] = (
    ("evaluate", "megatron/training.py", 983),
    ("evaluate_and_print_results", "megatron/training.py", 1030),
    ("train", "megatron/training.py", 904),
    ("pretrain", "megatron/training.py", 188),
    ("main", "pretrain_gpt.py", 245),
    ("wrapper", "torch/distributed/elastic/multiprocessing/errors/__init__.py", 345),
    ("<module>", "pretrain_gpt.py", 249),
)

BROADCAST_WAIT_STACK: tuple[PyspyFrame, ...] = (
    ("broadcast", "torch/distributed/distributed_c10d.py", 1191),
    ("_bcast_pipe_scalar", "deepspeed/runtime/pipe/engine.py", 542),
    ("eval_batch", "deepspeed/runtime/pipe/engine.py", 455),
    *_TAIL,
)
"""A peer waiting in a broadcast (BLOOM dump, node 48, 4 ranks)."""

BROADCAST_DATA_WAIT_STACK: tuple[PyspyFrame, ...] = (
    ("broadcast", "torch/distributed/distributed_c10d.py", 1191),
    ("_build_key_size_numel_dictionaries", "megatron/mpu/data.py", 50),
    ("broadcast_data", "megatron/mpu/data.py", 88),
    ("get_batch_pipe", "pretrain_gpt.py", 136),
    ("_next_batch", "deepspeed/runtime/pipe/engine.py", 631),
    ("_exec_load_micro_batch", "deepspeed/runtime/pipe/engine.py", 795),
    ("_exec_schedule", "deepspeed/runtime/pipe/engine.py", 1380),
    ("eval_batch", "deepspeed/runtime/pipe/engine.py", 449),
    *_TAIL,
)
"""TP peers waiting for the batch broadcast from the stuck rank (BLOOM dump, node 48, 3 ranks)."""

ALL_REDUCE_WAIT_STACK: tuple[PyspyFrame, ...] = (
    ("all_reduce", "torch/distributed/distributed_c10d.py", 1316),
    ("_reduce_outputs", "deepspeed/runtime/pipe/engine.py", 519),
    ("eval_batch", "deepspeed/runtime/pipe/engine.py", 452),
    *_TAIL,
)
"""A rank waiting in an all_reduce (BLOOM dump, node 49)."""

RECV_WAIT_STACK: tuple[PyspyFrame, ...] = (
    ("recv", "torch/distributed/distributed_c10d.py", 1002),
    ("recv", "deepspeed/runtime/pipe/p2p.py", 83),
    ("_exec_recv_activations", "deepspeed/runtime/pipe/engine.py", 1073),
    ("_exec_schedule", "deepspeed/runtime/pipe/engine.py", 1380),
    ("eval_batch", "deepspeed/runtime/pipe/engine.py", 449),
    *_TAIL,
)
"""A next pipeline stage waiting for activations (BLOOM dump, node 49)."""

DATALOADER_STACK: tuple[PyspyFrame, ...] = (
    ("wait", "threading.py", 306),
    ("get", "queue.py", 179),
    ("_try_get_data", "torch/utils/data/dataloader.py", 1011),
    ("_get_data", "torch/utils/data/dataloader.py", 1163),
    ("_next_data", "torch/utils/data/dataloader.py", 1207),
    ("__next__", "torch/utils/data/dataloader.py", 530),
    ("_next_batch", "deepspeed/runtime/pipe/engine.py", 627),
    ("_exec_load_micro_batch", "deepspeed/runtime/pipe/engine.py", 795),
    ("_exec_schedule", "deepspeed/runtime/pipe/engine.py", 1380),
    ("eval_batch", "deepspeed/runtime/pipe/engine.py", 449),
    *_TAIL,
)
"""The culprit stuck in its DataLoader while its peers wait (BLOOM dump, pid 688514, idle)."""

COMPUTE_STACK: tuple[PyspyFrame, ...] = (
    ("backward", "torch/autograd/__init__.py", 266),
    ("backward", "torch/_tensor.py", 522),
    ("backward", "deepspeed/runtime/fp16/loss_scaler.py", 63),
    ("backward", "deepspeed/runtime/zero/stage3.py", 2213),
    ("wrapped_fn", "deepspeed/utils/nvtx.py", 15),
    ("backward", "deepspeed/runtime/engine.py", 1976),
    ("wrapped_fn", "deepspeed/utils/nvtx.py", 15),
    ("backward", "accelerate/utils/deepspeed.py", 166),
    ("backward", "accelerate/accelerator.py", 2126),
    ("training_loop", "src/model_back/healing/scripts/fine_tune_accelerate.py", 410),
    ("training_function", "src/model_back/healing/scripts/fine_tune_accelerate.py", 540),
    ("main", "src/model_back/healing/scripts/fine_tune_accelerate.py", 583),
    ("<module>", "src/model_back/healing/scripts/fine_tune_accelerate.py", 587),
)
"""A main thread in the backward pass (accelerate#3104)."""


@dataclass(frozen=True)
class PyspyThread:
    """One thread of a dump; `native_tid` None prints the Python ident in hex instead."""

    frames: Sequence[PyspyFrame]
    native_tid: int | None
    status: ThreadStatus = "active"
    name: str | None = "MainThread"
    python_ident: int = 0


def thread_id_text(thread: PyspyThread) -> str:
    """Return the id py-spy prints: the native tid, else the ident as ``0x7F...``."""
    if thread.native_tid is not None:
        return str(thread.native_tid)
    return f"0x{thread.python_ident:X}"


def pyspy_thread_lines(thread: PyspyThread) -> list[str]:
    """Return one thread's header and frames."""
    header = f"Thread {thread_id_text(thread)} ({thread.status})"
    if thread.name is not None:
        header += f': "{thread.name}"'
    frames = [
        f"    {fn} ({file}:{line})" if line else f"    {fn} ({file})"
        for fn, file, line in thread.frames
    ]
    return [header, *frames]


def pyspy_dump(
    pid: int,
    cmdline: str,
    python_version: str,
    executable: str,
    threads: Sequence[PyspyThread],
) -> str:
    """Return the full text ``py-spy dump --pid`` prints for one process."""
    lines = [f"Process {pid}: {cmdline}", f"Python v{python_version} ({executable})", ""]
    for thread in threads:
        lines.extend(pyspy_thread_lines(thread))
    return "\n".join(lines) + "\n"


def rank_main_thread(pid: int, stack: Sequence[PyspyFrame], status: ThreadStatus) -> PyspyThread:
    """Return a rank's main thread (native tid = pid) on `stack`."""
    return PyspyThread(frames=tuple(stack), native_tid=pid, status=status)
