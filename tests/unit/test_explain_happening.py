"""Whether an incident told in words is happening now is judged on its own sentence and the one
after it (`happening.live`): a record is often a whole paragraph, and a condition, advice or a
`that is expected` elsewhere in it says nothing of the incident."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, silence_tests

test_a_judgement_in_the_next_sentence_silences = silence_tests(
    [
        "The disk is full; that is expected, it is our scratch buffer.",
        "The grad norm is NaN from step 200 on. This is expected with the lr we chose for the "
        "sweep.",
        "Before the fix the port was flapping; after replacing the cable it has been stable for "
        "3 days.",
        "If the disk is full, the trainer retries.",
    ]
)

test_a_condition_two_sentences_away_does_not = read_as_tests(
    [
        (
            "If you restart the job, the loss scaler resets. We restarted it twice today. The "
            "grad norm is NaN from step 200 on.",
            Category.NUMERICAL,
        ),
        (
            "When you see the NCCL banner, training has started. After an hour we hit an NCCL "
            "timeout on rank 3.",
            Category.HANG,
        ),
        (
            "If the program exited with a problem, there should be an error. I looked at the "
            "output for a while. Here it seems the program is killed by the system.",
            Category.HOST_MEMORY,
        ),
    ]
)
