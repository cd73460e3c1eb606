"""Classes of the fifty-fifth round and of the development misses left before it, each read as
a class: NVML's library that the loader cannot open, in any program's message."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_49", "0006", Category.APPLICATION, "nvml.library_missing"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Error: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
            Category.APPLICATION,
        ),
        (
            "RuntimeError: nvml: libnvidia-ml.so: cannot open shared object file: "
            "No such file or directory (is the NVIDIA runtime configured?)",
            Category.APPLICATION,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        # the device plugin on a node without GPUs says so and goes on
        "I0819 07:02:54.757556       1 factory.go:44] Detected non-NVML platform: could not load "
        "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or "
        "directory",
    ]
)
