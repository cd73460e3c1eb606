"""Classes of the fifty-second round's development misses (fresh_71, fresh_72, fresh_73), each
read as a class: epoch bars whose time climbs and levels off, a Chinese report whose figures sit
on two lines (figures next to CJK characters, CJK lines read as sentences), two cards named with
one busy and one idle, one card of several with no load, a Japanese generation that became slow,
one GPU's utilisation set to 0 beside the rest at 100 %, an inference's time against its past two
sentences apart, NVLink error counters by the thousand, gpud's `xid 119 detected`; and a Chinese
reply that the speed has come back."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_71", "0000", Category.STRAGGLER, "training.step_slowdown"),
        ("fresh_72", "0000", Category.STRAGGLER, "slowdown.step_time_rose"),
        ("fresh_72", "0002", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_72", "0003", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_72", "0008", Category.STRAGGLER, "straggler.slowness_in_japanese"),
        ("fresh_72", "0013", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_72", "0016", Category.STRAGGLER, "figures.speed_changed"),
        ("fresh_73", "0000", Category.GPU_DEGRADED, "nvlink.error_counters"),
        ("fresh_73", "0011", Category.GPU_HARDWARE, "monitor.xid_said"),
    ]
)


def test_a_chinese_reply_that_the_speed_came_back_ends_the_slowdown() -> None:
    assert alarms(corpus_text("fresh_72", "0020")) == []


test_look_alikes_stay_silent = silence_tests(
    [
        # a climb that falls back, a warm-up on epoch bars
        "1/9 100%|#| 69/69 [01:00<00:00, 12.0s/it]\n2/9 100%|#| 69/69 [01:00<00:00, 18.0s/it]\n"
        "3/9 100%|#| 69/69 [01:00<00:00, 25.0s/it]\n4/9 100%|#| 69/69 [01:00<00:00, 13.0s/it]",
        # the speed back, not only after a restart; each card alone, both normal
        "训练变慢了。现在训练速度已经恢复了。",
        "gpu_0利用率为100%，gpu_1利用率为98%",
        "最开始请求耗时是在50-80ms之间，请求超时设置为120ms以上。",
        # few NVLink errors since boot; a Xid said not to have happened
        "\t Link 0: Replay Errors: 3\n\t Link 0: Recovery Errors: 0\n\t Link 0: CRC Errors: 12",
        "no xid detected by dmesg in the last 24h, all GPUs healthy",
        # one GPU at 0 by the speaker's own choice
        "I set CUDA_VISIBLE_DEVICES=0 so only one GPU is used.",
    ]
)


test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("前3个epoch耗时正常，约10s。\n到第4个epoch的时候，每个epoch耗时60s。", Category.STRAGGLER),
        ("Last week it took 2 minutes per image. Now it takes 9 minutes.", Category.STRAGGLER),
        ("GPU1利用率为0，GPU0利用率为100%", Category.STRAGGLER),
        # a request's time, a service's step (development record fresh_49c-0003)
        (
            "最开始请求耗时在50ms左右，运行2个小时之后，请求耗时保持在120ms以上。",
            Category.STRAGGLER,
        ),
        ("\t Link 4: CRC Errors: 48211", Category.GPU_DEGRADED),
    ]
)
