"""Why a speed is no fault: the speaker's explanation, or two setups side by side.

The speed readers (rules_figures, rules_member_figures, rules_slow_told, rules_slowness) and the
monitors' readers (rules_monitors) ask the same questions of a report before they call a slowdown:
does the speaker explain it away (rules_slowdown.explains in English; `because we ...`, a trade-off
or `as expected` in the other languages; a warm-up; a member's own extra work), and does the text
set two GPU models or two mining algorithms side by side (a benchmark of setups, not a member behind
identical peers)? ``explained`` answers both for a text; ``explained_at`` reads the setups in the
match's own sentence only. ``SENTENCE`` is the sentence split they share.

Guarantees: each answer is computed once a text (cached); a reason that the member should not be
slow (`because we have 8 identical GPUs`) explains nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

from diagnosis.explain.rules_slowdown import explains

SENTENCE = re.compile(
    r"(?<!\bca\.)(?<!\bvs\.)(?<!approx\.)(?<!\betc\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?;])\s+"
    r"|(?<=[。！？])|\n"
)


@lru_cache(maxsize=256)
def explained(sentence: str) -> bool:
    """Whether the speaker explains the speed away (rules_slowdown.explains, the same `because
    we ...` in the other languages, a warm-up, a member's own extra work, two setups side by
    side); once a text."""
    return _explained_in_words(sentence) or setups_differ(sentence)


def explained_at(m: re.Match[str]) -> bool:
    """Whether the text explains the speed away, two setups read in the match's own sentence
    only (`A100 nodes for training and V100 nodes for eval. Among the A100 nodes, a100-07 ...`
    compares no setups)."""
    text = m.string
    start = max((b.end() for b in SENTENCE.finditer(text, 0, m.start())), default=0)
    stop = SENTENCE.search(text, m.end())
    own = text[start : stop.start() if stop else len(text)]
    return _explained_in_words(text) or setups_differ(own)


@lru_cache(maxsize=256)
def _explained_in_words(text: str) -> bool:
    """explained() without the setups (once a text)."""
    return bool(explains(text) or _BECAUSE_WE.search(text) or _OWN_WORK.search(text))


def said_planned(text: str) -> bool:
    """Whether any sentence of `text` says the change was planned or the speaker's own (`as
    planned in the recipe`, `not a regression`, `duplicamos el micro-batch`): said of the
    report as a whole, unlike `as expected` or `looks normal`, which may be said of another
    thing (the temperatures, an evaluation's pause)."""
    return bool(_PLANNED.search(text))


_PLANNED = re.compile(
    r"\bas\s+planned\b|\bnot\s+a\s+(?:regression|slowdown)\b"
    # the speaker's own change of the work in other languages (we doubled, we increased)
    r"|\b(?:duplicamos|dobramos|aumentamos|verdoppelten|verdoppelt\s+haben|удвоили|увеличили)\b"
    r"|\bnous\s+avons\s+doublé\b|\bhaben\s+wir\s+\w+\s+verdoppelt\b",
    re.IGNORECASE,
)

_GPU_MODEL = re.compile(
    r"(?:\b(?:RTX|GTX)\s?|\b(?:the|a|my|our|one|two|an?)\s+)(?P<n>[1-5]0[5-9]0(?:\s?Ti)?)(?![\w.])"
    r"|(?<![\w.])(?P<n2>[1-5]0[5-9]0(?:\s?Ti)?)(?=\s*(?:s\b|GPUs?\b|cards?\b|box\b|rig\b|Ti\b))"
    r"|\b(?P<dc>A10|A30|A40|A100|A800|A6000|H20|H100|H200|H800|GH200|B100|B200|GB200|V100|P100|P40|K80"
    r"|T4|L4|L40S?|M60|MI\d{3}X?)\b",
    re.IGNORECASE,
)
_ALGORITHM = re.compile(
    r"\b(?:ethash|etchash|kawpow|autolykos\w*|octopus|randomx|cuckoo\w*|equihash|progpow|firopow"
    r"|kheavyhash|blake3|zhash|beamhash\w*|cryptonight\w*|daggerhashimoto|x16r\w*|lyra2\w*)\b",
    re.IGNORECASE,
)
_DIFFERENT = re.compile(
    r"\bdifferent\s+(?:GPU\s+|card\s+)?models?\b|型号不同|不同型号", re.IGNORECASE
)


@lru_cache(maxsize=256)
def setups_differ(text: str) -> bool:
    """Whether the text sets two GPU models or two mining algorithms side by side (`GPU 2 on
    KawPow ... its neighbours on Ethash`, `one RTX 3060 ... two RTX 3090s`): setups compared,
    not a member behind identical peers."""
    models = {
        (m["n"] or m["n2"] or m["dc"]).replace(" ", "").lower() for m in _GPU_MODEL.finditer(text)
    }
    algorithms = {m[0].lower() for m in _ALGORITHM.finditer(text)}
    return len(models) > 1 or len(algorithms) > 1 or _DIFFERENT.search(text) is not None


_BECAUSE_WE = re.compile(
    r"(?:\b(?:weil|da)\s+wir\b|\bparce\s+qu(?:e|')\s*(?:nous|on)\b|\bcar\s+nous\b|\bporque\s+"
    r"(?:nosotros|hemos|duplicamos|aumentamos|nós|dobramos)\b|\bperché\s+abbiamo\b|потому\s+что\s+мы)"
    # (not `because we have 8 identical GPUs`: the reason it should not be slow)
    r"(?![^.\n]{0,40}(?:identi|gleich|mêmes|stess|mism|одинаков))|"
    r"因为我们|我们把|したため|(?:した|変えた|増やした|上げた)ので|karena\s+kami|vì\s+chúng\s+tôi|çünkü|"
    # Korean: after I changed it, because it got bigger (`바꿨더니`, `커져서`)
    r"바꿨더니|늘렸더니|키웠더니|커져서|늘려서|"
    r"\b(?:erwartet|prévu|attendu|esperado|previsto|ожидаемо)\b|予想通り|预期|"
    # a trade-off said in the other languages (`dafür ...`, `зато ...`: in return)
    r"\bdafür\b|(?<!\w)зато(?!\w)|\ben\s+cambio\b|\ben\s+échange\b|\bem\s+troca\b|\bin\s+cambio\b|"
    r"\bgradient\s+checkpointing\b",
    re.IGNORECASE,
)
_OWN_WORK = re.compile(
    r"\bbecause\s+(?:it|this\s+\w+)\s+(?:also\s+)?(?:runs|does|handles|hosts|logs|saves|writes|"
    r"evaluat\w*|holds|comput\w*)\b|\bduring\s+(?:the\s+)?warm-?up\b|\bwarm-?up\s+only\b",
    re.IGNORECASE,
)
