#!/usr/bin/env bash
# Record GPU fixtures on a machine with an NVIDIA GPU (not run in CI; no GPU there).
#
# 1. The node agent (`ingest.agent`, real NVML through pynvml) samples the GPUs and host every
#    second and tails the job's log, writing its events as JSON lines to $OUT/agent_events.jsonl.
# 2. A tiny PyTorch NCCL job under torchrun with the Flight Recorder on
#    (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT=1) stalls on purpose at step 3:
#    with 2+ GPUs, 2 processes and rank 1 never joins the all-reduce; with one GPU (NCCL refuses
#    two ranks on one device), 1 process whose all-reduce waits behind a 60 s GPU sleep. The
#    20 s watchdog timeout fires and dumps $OUT/fr_dumps/nccl_trace_rank_<rank>.
# Everything lands in $OUT (logs, versions, nvidia-smi -q, the job script itself) for
# committing under tests/fixtures/. Takes about 2 minutes; every step has a timeout.
#
#   OUT=/tmp/gpu_fixtures bash deploy/gpu_fixtures.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-$PWD/gpu_fixtures_out}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT/logs" "$OUT/fr_dumps"
rm -f "$OUT/.done"

command -v nvidia-smi >/dev/null || { echo "gpu_fixtures: no nvidia-smi (needs an NVIDIA GPU)" >&2; exit 2; }
timeout 60 nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
timeout 30 nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv > "$OUT/gpus.csv"
timeout 60 "$PY" -c '
import torch, pynvml
assert torch.cuda.is_available(), "torch sees no CUDA device"
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())
print("nvidia-ml-py", getattr(pynvml, "__version__", "?"))
' > "$OUT/versions.txt" || { cat "$OUT/versions.txt" >&2; exit 2; }
NGPU=$(timeout 60 "$PY" -c 'import torch; print(torch.cuda.device_count())')
WORLD=$(( NGPU >= 2 ? 2 : 1 ))

cat > "$OUT/agent_to_jsonl.py" <<'EOF'
"""Run the TrainGuard node agent until $OUT/.done appears (at most 200 s), events to JSON lines."""

import sys
import threading
import time
from pathlib import Path

from ingest.agent.run import Agent
from ingest.agent.settings import AgentSettings
from ingest.schema import encode_event

out = Path(sys.argv[1])


class JsonLines:
    """A Producer that writes each event as one JSON line."""

    def __init__(self, path: Path) -> None:
        self.handle = path.open("a")

    def send(self, event) -> None:
        self.handle.write(encode_event(event).decode() + "\n")

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        self.handle.write(value.decode(errors="replace") + "\n")

    def flush(self, timeout_s: float = 30.0) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


settings = AgentSettings(kernel_log="off", train_logs=[str(out / "logs" / "job.log")])
agent = Agent(settings, JsonLines(out / "agent_events.jsonl"))
stop = threading.Event()


def until_done() -> None:
    deadline = time.monotonic() + 200
    while not (out / ".done").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # the last samples after the job
    stop.set()


threading.Thread(target=until_done, daemon=True).start()
agent.run(stop)
print("agent stats:", agent.stats())
EOF

cat > "$OUT/nccl_stall_job.py" <<'EOF'
"""A tiny NCCL job that stalls at step 3 (see deploy/gpu_fixtures.sh)."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group(
    "nccl", timeout=timedelta(seconds=20), device_id=torch.device("cuda", local)
)
x = torch.ones(1 << 20, device="cuda")
for step in range(1, 6):
    if step == 3 and world > 1 and rank == world - 1:
        print(f"[rank{rank}] step {step}: stalling before the all-reduce", flush=True)
        time.sleep(150)
    if step == 3 and world == 1:
        print(f"[rank{rank}] step {step}: the all-reduce waits behind a GPU sleep", flush=True)
        torch.cuda._sleep(120_000_000_000)  # cycles: about a minute at ~2 GHz
    dist.all_reduce(x)
    torch.cuda.synchronize()
    print(f"[rank{rank}] step {step} all_reduce done, x[0]={x[0].item():.0f}", flush=True)
dist.destroy_process_group()
EOF

timeout 230 "$PY" "$OUT/agent_to_jsonl.py" "$OUT" > "$OUT/logs/agent.log" 2>&1 &
AGENT=$!

export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1
export TORCH_FR_DUMP_TEMP_FILE=$OUT/fr_dumps/nccl_trace_rank_
export TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$TORCH_FR_DUMP_TEMP_FILE
export NCCL_DEBUG=INFO NCCL_RAS_ENABLE=1
timeout 150 "$PY" -m torch.distributed.run --standalone --nproc-per-node="$WORLD" \
  "$OUT/nccl_stall_job.py" > "$OUT/logs/job.log" 2>&1
echo "job exit status $? (non-zero expected: the watchdog aborts the stalled job)" | tee -a "$OUT/logs/job.log"

touch "$OUT/.done"
wait "$AGENT"
rm -f "$OUT/.done"
echo "world size $WORLD on $NGPU GPU(s); wrote:"
ls -l "$OUT" "$OUT/fr_dumps" "$OUT/logs"
