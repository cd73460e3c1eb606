"""A real 4-rank torch.distributed job on the CPU (gloo), reporting through the integration.

Layout tp=2 x dp=2: TP groups {0,1} {2,3}, DP groups {0,2} {1,3}. Each step all-reduces a
row-parallel output over TP and the gradients over DP. With ``--stall-rank R --stall-step S``
rank R stops before its TP all-reduce of step S (as a rank stuck in its data loader does):
its TP peer waits in the TP all-reduce, the others in the DP all-reduce behind it.

Run: ``python -m tests.integration.torch_job --bootstrap HOST:PORT --prefix P --job J``.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import CommKind
from trainguard.integrations.torch import enable

WORLD = 4


def _groups() -> tuple[dist.ProcessGroup, dist.ProcessGroup, dict[object, CommKind]]:
    rank = dist.get_rank()
    kinds: dict[object, CommKind] = {}
    tp = dp = None
    for ranks in ([0, 1], [2, 3]):  # every rank creates every group, in the same order
        g = dist.new_group(ranks)
        if rank in ranks:
            tp, kinds[g] = g, CommKind.TP
    for ranks in ([0, 2], [1, 3]):
        g = dist.new_group(ranks)
        if rank in ranks:
            dp, kinds[g] = g, CommKind.DP
    assert tp is not None and dp is not None
    return tp, dp, kinds


def run_rank(rank: int, args: argparse.Namespace) -> None:
    """Train a tiny model for args.steps steps, reporting to Kafka."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    tp, dp, kinds = _groups()
    bus = KafkaBus(args.bootstrap, Topics(args.prefix), linger_ms=5)
    tg = enable(args.job, bus, groups=kinds, sample_interval_s=args.sample_s)
    torch.manual_seed(rank)
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, args.steps + 1):
        x = torch.randn(8, 16)
        y = model(x)
        if rank == args.stall_rank and step == args.stall_step:
            time.sleep(3600)
        full = y.detach().clone()
        dist.all_reduce(full, group=tp)  # a row-parallel layer's output
        loss = (y * full).mean()
        opt.zero_grad()
        loss.backward()
        norm = 0.0
        for p in model.parameters():
            assert p.grad is not None
            dist.all_reduce(p.grad, group=dp)
            norm += float(p.grad.norm() ** 2)
        opt.step()
        tg.step(step, loss=loss.item(), grad_norm=norm**0.5)
        time.sleep(args.step_sleep_s)
    tg.close()
    dist.destroy_process_group()


def main() -> None:
    """Spawn the ranks."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--port", type=int, default=29631)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--stall-rank", type=int, default=-1)
    parser.add_argument("--stall-step", type=int, default=-1)
    parser.add_argument("--step-sleep-s", type=float, default=0.1)
    parser.add_argument("--sample-s", type=float, default=1.0)
    args = parser.parse_args()
    mp.spawn(run_rank, args=(args,), nprocs=WORLD)


if __name__ == "__main__":
    main()
