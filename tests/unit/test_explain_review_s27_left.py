"""The review of session 27 left five findings open; four are mended here (session 28): another
CPU's `temperature/speed normal` no longer ends a throttle (rules_host.CpuHeat), a sentence that
opens on another time no longer judges the incident before it (happening._ANOTHER_TIME), a GPU
throttle set on purpose is no slowness either (rules_slowness reads said.gpu_throttling's
`live`), and a pull request that fixes a message describes it (documents)."""

from __future__ import annotations

from diagnosis.explain import explain
from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, silence_tests

_THROTTLE = "[{t}.0] CPU{cpu}: {scope} temperature above threshold, cpu clock throttled"
_NORMAL = "[{t}.0] CPU{cpu}: {scope} temperature/speed normal"


def _heat(*lines: tuple[str, int, str]) -> str:
    """A kernel log of throttles (`hot`) and their ends (`normal`), one line per tuple."""
    out = []
    for t, (kind, cpu, scope) in enumerate(lines, start=100):
        template = _THROTTLE if kind == "hot" else _NORMAL
        out.append(template.format(t=t, cpu=cpu, scope=scope))
    return "\n".join(out)


def test_a_throttle_ends_only_with_its_own_cpus_normal() -> None:
    other_cpu = _heat(("hot", 3, "Package"), ("normal", 17, "Package"))
    other_scope = _heat(("hot", 3, "Core"), ("normal", 3, "Package"))
    one_left = _heat(("hot", 3, "Package"), ("hot", 4, "Package"), ("normal", 3, "Package"))
    for text in (other_cpu, other_scope, one_left):
        assert explain(text)[0].category is Category.HOST_HARDWARE, text


def test_every_throttle_ended_is_benign_and_ends_its_machine_checks() -> None:
    ended = _heat(
        ("hot", 3, "Package"), ("hot", 4, "Core"), ("normal", 4, "Core"), ("normal", 3, "Package")
    )
    with_mce = ended + "\n[105.0] mce: [Hardware Error]: Machine check events logged"
    for text in (ended, with_mce):
        assert [f.category for f in explain(text)] == [Category.BENIGN], text


def test_a_throttle_that_starts_again_after_its_normal_stands() -> None:
    again = _heat(("hot", 3, "Package"), ("normal", 3, "Package"), ("hot", 3, "Package"))
    assert explain(again)[0].category is Category.HOST_HARDWARE


test_look_alikes_stay_silent = silence_tests(
    [
        "GPU 0 is throttled by the 300 W power cap we set on purpose for this benchmark.",
        "This PR fixes CUDA runtime error: out of memory when loading checkpoints on CPU-only "
        "machines.",
        "The patch that resolves NCCL WARN NET/IB : Got completion with error 12 is merged.",
    ]
)

test_variants_are_read = read_as_tests(
    [
        (
            "GPU 2 keeps throttling again today. Yesterday the clocks were normal.",
            Category.GPU_DEGRADED,
        ),
        (
            "The NFS mount on node07 hangs and ls never returns. Last week it was fixed by a "
            "remount.",
            Category.HOST_STORAGE,
        ),
        (
            "The commit that fixed it is deployed, and the job still fails with CUDA runtime "
            "error: out of memory now.",
            Category.GPU_OOM,
        ),
    ]
)
