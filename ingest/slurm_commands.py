"""The one way TrainGuard runs Slurm commands: an argv list, no shell, one cluster, a timeout.

Job discovery (`ingest/readers/discovery.py`) and the Slurm executors
(`actions/executors/slurm.py`) both run `scontrol`/`squeue` through `SlurmCommands.run`.
The command is never a shell string: callers validate node names and job ids before they
become arguments, and nothing in an argument is interpreted by a shell.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence


class SlurmError(RuntimeError):
    """A Slurm command failed or was refused before it ran."""


class SlurmCommands:
    """Runs Slurm commands against one cluster (SLURM_CONF) with a timeout."""

    def __init__(self, conf: str | None = None, timeout_s: float = 30.0, bindir: str = "") -> None:
        self.conf = conf
        self.timeout_s = timeout_s
        self.bindir = bindir

    def run(self, argv: Sequence[str]) -> str:
        """Run one Slurm command (argv, no shell); return stdout or raise SlurmError."""
        env = dict(os.environ)  # the caller's PATH and Slurm/Munge variables, passed through
        if self.conf:
            env["SLURM_CONF"] = self.conf
        cmd = [os.path.join(self.bindir, argv[0]) if self.bindir else argv[0], *argv[1:]]
        try:
            out = subprocess.run(
                cmd, capture_output=True, text=True, timeout=self.timeout_s, env=env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{argv[0]} failed to run: {exc}") from exc
        if out.returncode != 0:
            raise SlurmError(f"{' '.join(argv)}: {out.stderr.strip() or out.stdout.strip()}")
        return out.stdout
