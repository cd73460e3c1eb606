"""A job's parallel layout from how it was launched: its batch script or container command.

Jobs without the in-job integration still state their parallelism on the command line.
`read_launch` finds it in Megatron-LM, torchtitan and DeepSpeed arguments (shell variables of
the script resolved), torchrun's ranks per node, and says what it could not read;
`layout_groups` turns it into the TP/PP/DP/CP/EP communicators those frameworks create:

- Megatron-LM (``megatron/core/parallel_state.py``, NVIDIA/Megatron-LM
  934c8260ada361db9b155d504c5b20600731d773): ranks are a grid in the order
  ``tp-cp-ep-dp-pp`` (tp fastest; ``--use-tp-pp-dp-mapping``: ``tp-cp-ep-pp-dp``), groups
  vary one dimension with the others fixed (``generate_masked_orthogonal_rank_groups``); the
  dense groups come from a grid without ep, the expert groups from one with
  ``--expert-tensor-parallel-size`` (default tp), ep and the expert data-parallel size and no cp.
- torchtitan (``torchtitan/distributed/parallel_dims.py``, pytorch/torchtitan
  73bb964d8f66f585d977b40fe3de88301cdd03cd): a DeviceMesh ``[pp, dp_replicate, dp_shard, cp,
  tp]``, row-major (tp fastest), from ``--parallelism.*_degree`` or the TOML config's
  ``[parallelism]`` table; ``data_parallel_shard_degree = -1`` takes what is left.
- DeepSpeed pipelines (``deepspeed/runtime/pipe/topology.py``): ``PipeDataParallelTopology``
  axes ``[pipe, data]``, data fastest, from ``--pipeline-parallel-size``. Megatron-DeepSpeed
  states Megatron's flags, and its ``PipeModelDataParallelTopology`` is Megatron's tp-dp-pp.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ingest.schema import CommKind, Communicator, ParallelLayout

ReadText = Callable[[str], str | None]
"""Returns a file's text (a config the command line names), or None when it cannot be read."""

_ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+|declare\s+(?:-x\s+)?)?([A-Za-z_]\w*)=(.*)$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|([A-Za-z_]\w*))")
_QUOTES = "\"'"

MEGATRON = {
    "tp": "--tensor-model-parallel-size",
    "pp": "--pipeline-model-parallel-size",
    "cp": "--context-parallel-size",
    "ep": "--expert-model-parallel-size",
    "etp": "--expert-tensor-parallel-size",
}
TITAN = {
    "tp": "tensor_parallel_degree",
    "pp": "pipeline_parallel_degree",
    "cp": "context_parallel_degree",
    "dp_shard": "data_parallel_shard_degree",
    "dp_replicate": "data_parallel_replicate_degree",
    "ep": "expert_parallel_degree",
}
TITAN_SECTIONS = ("parallelism", "training")  # torchtitan moved the degrees to [parallelism]
NPROC = ("--nproc-per-node", "--nproc_per_node", "--num-gpus", "--num_gpus")
NPROC_ENV = "PET_NPROC_PER_NODE"  # torchrun's environment default (Kubeflow sets it)
NODE_RANK = ("--node-rank", "--node_rank")


class LayoutError(ValueError):
    """A launch whose parallel sizes cannot be read or do not fit the job (the reason says why)."""


@dataclass(frozen=True)
class Launch:
    """What a job's launch command says about its ranks and parallel layout."""

    framework: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    order: str = "tp-cp-ep-dp-pp"
    nproc_per_node: int | None = None
    node_rank: str | None = None  # the expression torchrun's --node-rank got, if any
    problems: list[str] = field(default_factory=list)  # why the sizes are not known
    warnings: list[str] = field(default_factory=list)  # what was guessed (ranks per node)


def shell_vars(script: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the variables a script assigns (last assignment wins), over `env`."""
    out = dict(env or {})
    for line in script.splitlines():
        m = _ASSIGN.match(line)
        if m and not line.lstrip().startswith("#"):
            out[m.group(1)] = _unquote(m.group(2).split(" #")[0].strip())
    return out


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
        return value[1:-1]
    return value.strip(_QUOTES)


def resolve(value: str, variables: Mapping[str, str], depth: int = 5) -> str:
    """Return `value` with ``$X``, ``${X}`` and ``${X:-default}`` replaced (unknown ones kept)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in variables:
            return variables[name]
        return m.group(2) if m.group(2) is not None else m.group(0)

    for _ in range(depth):
        new = _VAR.sub(sub, value)
        if new == value:
            break
        value = new
    return _unquote(value)


def _code(script: str) -> str:
    """Return the script without comment lines, backslash continuations joined."""
    lines = [ln for ln in script.splitlines() if not ln.lstrip().startswith("#")]
    return re.sub(r"\\\n", " ", "\n".join(lines))


def flag_values(code: str, flag: str) -> list[str]:
    """Return every value given to `flag` (``--flag N`` or ``--flag=N``), in order."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(?:=|\s+)([^\s;|&)]+)")
    return [m.group(1) for m in pattern.finditer(code)]


def _has_flag(code: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", code) is not None


def _int_of(
    flag: str, raw: list[str], variables: Mapping[str, str], problems: list[str]
) -> int | None:
    values = {resolve(v, variables) for v in raw}
    if not values:
        return None
    if len(values) > 1:
        problems.append(f"{flag} is given different values: {sorted(values)}")
        return None
    (value,) = values
    try:
        return int(value)
    except ValueError:
        problems.append(f"{flag} {value!r} is not a number (an unresolved shell expression?)")
        return None


def read_launch(
    script: str, env: Mapping[str, str] | None = None, read_text: ReadText | None = None
) -> Launch:
    """Return what a batch script or container command says about the job's layout."""
    variables = shell_vars(script, env)
    code = _code(script)
    problems: list[str] = []

    def ints(flags: Mapping[str, str]) -> dict[str, int]:
        out = {}
        for key, flag in flags.items():
            n = _int_of(flag, flag_values(code, flag), variables, problems)
            if n is not None:
                out[key] = n
        return out

    warnings: list[str] = []
    nproc = None
    for flag in NPROC:
        nproc = nproc or _int_of(flag, flag_values(code, flag), variables, warnings)
    if nproc is None and NPROC_ENV in variables:
        nproc = _int_of(NPROC_ENV, [variables[NPROC_ENV]], variables, warnings)
    node_rank = next((v for f in NODE_RANK for v in flag_values(code, f)), None)

    def launch(framework: str | None, sizes: dict[str, int], order: str = "") -> Launch:
        return Launch(framework, sizes, order, nproc, node_rank, problems, warnings)

    megatron = ints(MEGATRON)
    if megatron or re.search(r"pretrain_\w+\.py|Megatron-(?:LM|DeepSpeed)", code):
        mapping = _has_flag(code, "--use-tp-pp-dp-mapping")
        return launch("megatron", megatron, "tp-cp-ep-pp-dp" if mapping else "tp-cp-ep-dp-pp")
    titan = _titan_sizes(code, variables, problems, read_text)
    if titan is not None:
        return launch("torchtitan", titan, "tp-cp-dp_shard-dp_replicate-pp")
    pipe = ints({"pp": "--pipeline-parallel-size"})
    if pipe and (_has_flag(code, "--deepspeed") or re.search(r"\bdeepspeed\b", code)):
        return launch("deepspeed", pipe, "dp-pp")
    return launch(None, {})


def _titan_sizes(
    code: str, variables: Mapping[str, str], problems: list[str], read_text: ReadText | None
) -> dict[str, int] | None:
    """Return torchtitan's degrees: its TOML config's, overridden by the command line's."""
    sizes: dict[str, int] = {}
    found = False
    config = next(
        (v for f in ("--job.config_file", "--job.config-file") for v in flag_values(code, f)), None
    )
    if config is not None:
        found = True
        path = resolve(config, variables)
        text = read_text(path) if read_text else None
        if text is None:
            problems.append(f"torchtitan config {path} could not be read: its degrees are unknown")
        else:
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                problems.append(f"torchtitan config {path}: {exc}")
                doc = {}
            for section in TITAN_SECTIONS:
                table = doc.get(section) or {}
                sizes.update(
                    {k: int(table[v]) for k, v in TITAN.items() if isinstance(table.get(v), int)}
                )
    for key, name in TITAN.items():
        for section in TITAN_SECTIONS:
            for spelling in (name, name.replace("_", "-")):
                flag = f"--{section}.{spelling}"
                n = _int_of(flag, flag_values(code, flag), variables, problems)
                if n is not None:
                    sizes[key] = n
                    found = True
    return sizes if found or "torchtitan" in code else None


# --------------------------------------------------------------------------- groups


def groups_along(dims: Sequence[tuple[str, int]], along: str) -> list[list[int]]:
    """Return the rank groups varying one grid dimension, the others fixed (dims fastest first).

    The groups come in order of their first rank and list their ranks ascending, as
    Megatron's ``generate_masked_orthogonal_rank_groups`` and a DeviceMesh dimension do.
    """
    names = [n for n, _ in dims]
    sizes = [s for _, s in dims]
    i = names.index(along)
    stride = math.prod(sizes[:i])
    return [
        [base + k * stride for k in range(sizes[i])]
        for base in range(math.prod(sizes))
        if (base // stride) % sizes[i] == 0
    ]


_KIND = {"tp": CommKind.TP, "pp": CommKind.PP, "cp": CommKind.CP, "ep": CommKind.EP}


def _comms(
    prefix: str, dims: Sequence[tuple[str, int]], which: Sequence[str]
) -> list[Communicator]:
    out = []
    for name in which:
        size = dict(dims)[name]
        if size <= 1:
            continue
        kind = _KIND.get(name, CommKind.DP)
        for i, ranks in enumerate(groups_along(dims, name)):
            out.append(Communicator(comm=f"{prefix}{name}-{i}", kind=kind, ranks=ranks))
    return out


def _grid(order: str, sizes: Mapping[str, int]) -> list[tuple[str, int]]:
    return [(name, sizes[name]) for name in order.split("-") if name in sizes]


def _positive(sizes: Mapping[str, int]) -> None:
    bad = {k: v for k, v in sizes.items() if v < 1 and not (k == "dp_shard" and v == -1)}
    if bad:
        raise LayoutError(f"parallel sizes must be at least 1: {bad}")


Groups = tuple[ParallelLayout, list[Communicator]]


def layout_groups(launch: Launch, world: int) -> Groups:
    """Return the layout and the TP/PP/DP/CP/EP communicators of a launch on `world` ranks."""
    if launch.framework is None:
        raise LayoutError("no Megatron-LM, torchtitan or DeepSpeed parallel arguments found")
    if launch.problems:
        raise LayoutError("; ".join(launch.problems))
    s = dict(launch.sizes)
    _positive(s)
    if launch.framework == "megatron":
        return _megatron(s, launch.order, world)
    if launch.framework == "torchtitan":
        if s.get("ep", 1) > 1:
            raise LayoutError("torchtitan expert parallelism reshapes the mesh: not derived")
        return _titan(s, world)
    return _deepspeed(s, world)


def describe(launch: Launch, layout: ParallelLayout) -> str:
    """Return where a derived layout came from, for the topology's ``layout_source``."""
    sizes = f"tp={layout.tp} pp={layout.pp} dp={layout.dp} cp={layout.cp} ep={layout.ep}"
    order = {"megatron": f"Megatron order {launch.order}", "torchtitan": "torchtitan mesh"}
    how = order.get(launch.framework or "", "DeepSpeed pipe-data topology")
    text = f"{launch.framework} arguments of the launch command: {sizes} ({how})"
    return "; ".join([text, *launch.warnings])


def _split(world: int, model: int, what: str) -> int:
    if model > world or world % model:
        raise LayoutError(f"{world} ranks do not divide into {what} = {model}")
    return world // model


def _megatron(s: dict[str, int], order: str, world: int) -> Groups:
    tp, pp, cp, ep = (s.get(k, 1) for k in ("tp", "pp", "cp", "ep"))
    etp = s.get("etp", tp)
    dp = _split(world, tp * pp * cp, f"tp x pp x cp ({tp} x {pp} x {cp})")
    dense = _grid(
        order.replace("ep-", "").replace("-ep", ""), {"tp": tp, "cp": cp, "dp": dp, "pp": pp}
    )
    comms = _comms("", dense, ("tp", "cp", "dp", "pp"))
    if ep > 1:
        edp = _split(world, etp * ep * pp, f"expert tp x ep x pp ({etp} x {ep} x {pp})")
        expert = _grid(order, {"tp": etp, "ep": ep, "dp": edp, "pp": pp})
        comms += _comms("", expert, ("ep",))
    return ParallelLayout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp), comms


def _titan(s: dict[str, int], world: int) -> Groups:
    tp, pp, cp, rep = (s.get(k, 1) for k in ("tp", "pp", "cp", "dp_replicate"))
    shard = s.get("dp_shard", -1)
    if shard == -1:
        shard = _split(
            world, rep * cp * tp * pp, f"dp_replicate x cp x tp x pp ({rep}x{cp}x{tp}x{pp})"
        )
    if rep * shard * cp * tp * pp != world:
        raise LayoutError(
            f"dp_replicate({rep}) * dp_shard({shard}) * cp({cp}) * tp({tp}) * pp({pp})"
            f" != {world} ranks"
        )
    mesh = [("tp", tp), ("cp", cp), ("dp_shard", shard), ("dp_replicate", rep), ("pp", pp)]
    comms = _comms("", mesh, ("tp", "cp", "dp_shard", "dp_replicate", "pp"))
    return ParallelLayout(tp=tp, pp=pp, dp=rep * shard, cp=cp), comms


def _deepspeed(s: dict[str, int], world: int) -> Groups:
    pp = s.get("pp", 1)
    dp = _split(world, pp, f"pipeline stages ({pp})")
    comms = _comms("", [("dp", dp), ("pp", pp)], ("dp", "pp"))
    return ParallelLayout(pp=pp, dp=dp), comms
