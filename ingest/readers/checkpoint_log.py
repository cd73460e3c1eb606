"""Training-log lines that say a checkpoint is saved (complete), as the frameworks print them.

A drain that waits for the job's next checkpoint must see the save *finish*: a line printed
when the save starts ("saving checkpoint at iteration ...") is no proof there is something
to restart from. Formats (sources cited in tests/fixtures/checkpoint_log_lines.txt):

- Megatron-LM ``save_checkpoint`` (megatron/training/checkpointing.py), rank 0 after every
  rank wrote its shard: ``  successfully saved checkpoint from iteration {:7d} to {path}``,
  newer versions followed by `` [ t 1/8, p 1/1 ]``; Megatron-DeepSpeed and older Megatron
  print ``successfully saved checkpoint at iteration``.
- DeepSpeed's ``[Torch] Checkpoint {tag} is ready now!`` is *not* one: each rank prints it
  when its own files are written, while other ranks are still saving (the Megatron-DeepSpeed
  block of the fixture shows one 6 s early), and recent releases print nothing. Megatron-
  DeepSpeed ends the save with the Megatron line above.
- torchtitan's CheckpointManager.save: ``Finished saving the checkpoint in 3.72 seconds.``,
  later ``Finished saving the checkpoint (or staging if async is enabled)in 5.53 seconds.``
  With async checkpointing on, the later line means staged in host memory, not yet written;
  the line cannot tell the two apart, so a job saving asynchronously should be drained with
  a policy that waits a little after the line (`settle_s`).

Lines come as the log agent read them: torchrun's ``[rank0]:`` prefix and ANSI colours are
allowed anywhere before the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Lower-case substrings one of which every recognised line contains (a cheap SQL prefilter).
NEEDLES: tuple[str, ...] = (
    "successfully saved checkpoint",
    "finished saving the checkpoint",
)

_MEGATRON = re.compile(
    r"successfully saved checkpoint (?:from|at) iteration\s+(?P<it>\d+)(?:\s+to\s+(?P<path>\S+))?"
)
_TITAN = re.compile(r"Finished saving the checkpoint\b")


@dataclass(frozen=True)
class CheckpointSaved:
    """A finished checkpoint save as one log line reports it."""

    framework: str
    iteration: int | None = None
    path: str | None = None


def parse_checkpoint_saved(line: str) -> CheckpointSaved | None:
    """Return the finished save a line reports, or None for any other line."""
    if "checkpoint" not in line:
        return None
    m = _MEGATRON.search(line)
    if m is not None:
        return CheckpointSaved("megatron", int(m.group("it")), m.group("path"))
    if _TITAN.search(line) is not None:
        return CheckpointSaved("torchtitan")
    return None
