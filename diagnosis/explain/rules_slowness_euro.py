"""A slowdown told in German, French, Spanish, Portuguese or Russian words: the shape of
rules_slowness, read in each with rules_slowness_cjk's ``Reader``.

A sentence reports a slowdown when it has a word of slowing (a comparative: langsamer, plus
lent, más lento, mais lento, медленнее; a verb: verlangsamt, ralentit, se ralentiza,
замедлилось; a speed or throughput that falls; a step that takes longer) with a subject in the
same sentence (training, GPU, node, rank, card, epoch, step, iteration, speed), no negation in
the words just before it (or, in German, ``nicht`` after it), no explanation (expected,
normal, because, a trade-off's concession: dafür, en revanche, en cambio, em compensação,
зато; a changelog's fix: behoben, corrigé) and nothing slow that is
not training (inference, a download, a compilation, a disk). Two GPU models named in the
sentence are a comparison of hardware, not a member that became slow.

Guarantees: the rules run right after the English one, after every other rule; the verdict is
rules_slowness.slowed's: a straggler warning of the family's lowest confidence.
"""

from __future__ import annotations

import re

from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_slowness_cjk import Reader

_MODELS = (
    r"|(?-i:\b(?P<model>(?:RTX|GTX|[AHVTL])\s?\d{2,4})\b.*\b(?!(?P=model)\b)"
    r"(?:RTX|GTX|[AHVTL])\s?\d{2,4}\b)"
)
"""Two different GPU models in one sentence: hardware compared (kept with each language's
not-training)."""


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_SLOW = {
    "german": (
        r"\blangsamer\b|\bverlangsam\w+|\b(?:Geschwindigkeit|Durchsatz|Leistung)\s+(?:\w+\s+){0,3}?"
        r"(?:sinkt|fällt|gesunken|gefallen|bricht\s+ein|eingebrochen)\b"
        r"|\bdauer(?:t|n)\s+(?:\w+\s+){0,2}?länger\b"
        # the time a step takes that rose (`die Zeit pro Schritt ist gestiegen`)
        r"|\b(?:Zeit|Dauer)\s+(?:pro|je)\s+(?:Schritt|Iteration|Step|Batch)\s+(?:\w+\s+){0,2}?"
        r"(?:steigt|stieg|ist\s+gestiegen|wächst)\b"
        r"|\bdoppelt\s+so\s+lange\b"
        r"|\b(?:Schrittzeit|Iterationszeit|Epochenzeit|Laufzeit)\s+(?:\w+\s+){0,4}?verdoppelt\b"
        # people's words: a run that drags (`wird zäher`), a member that limps behind
        r"|\bzäher\b|\bhinkt\s+(?:\w+\s+){0,4}?hinterher\b"
    ),
    "french": (
        r"\bplus\s+lente?s?\b|\bralenti\w*|\b(?:vitesse|débit|performances?)\s+(?:\w+\s+){0,3}?"
        r"(?:baisse|chute|diminue|a\s+baissé|a\s+chuté)\b|\bprend\s+(?:\w+\s+){0,2}?plus\s+de\s+"
        r"temps\b"
        r"|\btemps\s+(?:par|d['’]une?|de\s+chaque)\s*(?:étape|pas|itération|step|batch)\s+"
        r"(?:\w+\s+){0,2}?(?:augmente|a\s+augmenté|monte|a\s+monté)\b"
        # a member that lags (`une des 4 cartes traîne`)
        r"|\btra[iî]ne(?:nt)?\b"
    ),
    "spanish": (
        r"\bm[aá]s\s+lent[oa]s?\b|\bralentiz\w+|\b(?:velocidad|rendimiento)\s+(?:\w+\s+){0,3}?"
        r"(?:cae|cayó|disminuye|disminuyó|bajó|se\s+reduce)\b|\btarda\w*\s+(?:\w+\s+){0,2}?"
        r"m[aá]s\b(?!\s+o\s+menos)"
        r"|\btiempo\s+(?:por|de\s+cada)\s+(?:paso|iteraci\w+|step|batch|lote)\s+(?:\w+\s+){0,2}?"
        r"(?:aument[óa]|subi[óo]|sube|creci[óo]|crece)\b"
        # a member left behind (`una de ellas se queda atrás en cada paso`)
        r"|\bse\s+queda(?:n)?\s+atr[aá]s\b"
    ),
    "portuguese": (
        r"\bmais\s+lent[oa]s?\b|\bdesaceler\w+|\b(?:velocidade|desempenho)\s+(?:\w+\s+){0,3}?"
        r"(?:caiu|cai|diminuiu|diminui)\b|\bdemora\w*\s+(?:\w+\s+){0,2}?mais\b(?!\s+ou\s+menos)"
        r"|\btempo\s+(?:por|de\s+cada)\s+(?:passo|itera\w+|step|batch|lote)\s+(?:\w+\s+){0,2}?"
        r"(?:aumentou|aumenta|subiu|sobe|cresceu|cresce)\b|\bdemora\w*\s+o\s+dobro\b"
        # a time per epoch or step that doubled (`O tempo por época dobrou`)
        r"|\btempo\s+(?:por|de\s+cada)\s+(?:época|passo|itera\w+|step|batch)\s+(?:\w+\s+){0,2}?dobrou\b"
        r"|\bmais\s+devagar\b"
    ),
    "russian": (
        r"медленнее|замедл\w+|(?:скорость|производительность)\s+(?:\w+\s+){0,3}?"
        r"(?:упала|падает|снизилась|снижается|уменьшилась)|(?:стал|стало|стала|стали)\s+"
        r"(?:\w+\s+){0,5}?дольше"
        r"|время\s+(?:на\s+)?(?:один\s+|каждый\s+)?(?:шаг|итераци\w+|батч|step)\w*\s+(?:\w+\s+){0,2}?"
        r"(?:выросло|растёт|растет|увеличилось|увеличивается)"
        # people's word for a run that drags (`Обучение тормозит всё сильнее`)
        r"|тормоз(?:ит|ят|ило|ить)"
    ),
}
_READERS = {
    "german": Reader(
        _words(
            r"\b(?:Training|Knoten|GPUs?|Ranks?|Karten?|Grafikkarten?|Epochen?|Schritte?|"
            r"Iterationen?|Durchsatz|Geschwindigkeit|Worker)\b"
        ),
        _words(r"\b(?:nicht|kein\w*|nie)\s+(?:\w+\s+){0,3}$"),
        _words(
            r"\berwartet|\bnormal\b|\bweil\b|\bda\s+wir\b|\bdafür\b|\bBehoben\b|\bbehoben\b"
            r"|\bnachdem\s+wir\b|\bwir\s+(?:\w+\s+){0,4}?verdoppelt"
        ),
        _words(r"\bInferenz|\bDownload|\bKompil\w+|\bFestplatte" + _MODELS),
        _words(r"(?:\s+\w+){0,3}?\s+(?:nicht|kaum)\b"),  # a negation after the verb
    ),
    "french": Reader(
        _words(
            r"\b(?:entra[iî]nement|GPUs?|n(?:œ|oe)uds?|rangs?|cartes?|époques?|epochs?|étapes?|"
            r"itérations?|débit|vitesse|workers?)\b"
        ),
        _words(
            r"\b(?:pas|jamais|aucun\w*)\s+(?:\w+\s+){0,2}$|\bne\s+(?:\w+\s+)?$|\bn['’]\s*$"
            r"|\béviter\s+de\s+$"
        ),
        _words(r"\battendu|\bnormal\b|\bparce\s+que\b|\bcar\s+nous\b|\ben\s+revanche\b|\bcorrigé"),
        _words(r"\binférence|\btéléchargement|\bcompilation|\bdisque" + _MODELS),
    ),
    "spanish": Reader(
        _words(
            r"\b(?:entrenamiento|GPUs?|nodos?|rangos?|tarjetas?|épocas?|pasos?|iteraci\w+|"
            r"velocidad|rendimiento)\b"
        ),
        _words(r"\b(?:no|nunca|ningún|ninguna)\s+(?:\w+\s+){0,2}$"),
        _words(
            r"\besperado|\bnormal\b|\bporque\b|\bdebido\s+a\b|\ben\s+cambio\b|\bcorregido"
            r"|\bal\s+(?:duplicar|aumentar|subir|cambiar)\b|\bduplicamos\b"
        ),
        _words(r"\binferencia|\bdescarga|\bcompilaci\w+|\bdisco\b" + _MODELS),
    ),
    "portuguese": Reader(
        _words(
            r"\b(?:treinamento|treino|GPUs?|nó|épocas?|passos?|iteraç\w+|velocidade|"
            r"desempenho)\b"
        ),
        _words(r"\b(?:não|nunca|nenhum\w*)\s+(?:\w+\s+){0,2}$"),
        _words(
            r"\besperado|\bnormal\b|\bporque\b|\bem\s+compensação\b|\bcorrigido"
            r"|\bdobramos\b|\baumentamos\b|\btudo\s+certo\b"
        ),
        _words(r"\binferência|\bdownload|\bcompilaç\w+|\bdisco\b" + _MODELS),
    ),
    "russian": Reader(
        _words(
            r"обучени\w+|тренировк\w+|GPU|(?:видео)?карт(?:а|ы|у|е|ой|ами|ах)\b|узл\w+|нод\w+|ранг\w*|"
            r"эпох\w+|"
            r"шаг\w*|итераци\w+|скорость|DDP"
        ),
        _words(r"(?:\bне|\bнет|никогда)\s+(?:\w+\s+){0,2}$"),
        _words(r"ожидаем\w*|нормальн\w*|потому\s+что|\bзато\b|исправлен\w*|удвоил\w*|увеличил\w*"),
        _words(r"инференс\w*|загрузк\w+|компиляци\w+|диск\w*" + _MODELS),
    ),
}
_NEEDLES = {
    "german": ("langsamer", "verlangsam", "sinkt", "fällt", "gesunken", "gefallen", "ein")
    + ("länger", "steigt", "stieg", "gestiegen", "wächst", "doppelt", "zäher", "hinterher"),
    "french": ("lent", "ralenti", "baisse", "chute", "diminue", "baissé", "chuté", "temps")
    + ("traîne", "traine"),
    "spanish": ("lent", "ralentiz", "baja", "cae", "cayó", "disminu", "bajó", "reduce", "tarda")
    + ("tiempo", "atrás", "atras"),
    "portuguese": ("lent", "desaceler", "caiu", "cai", "diminu", "demora", "tempo", "dobro")
    + ("devagar",),
    "russian": ("медленнее", "замедл", "упала", "падает", "сниз", "уменьш", "дольше", "время")
    + ("тормоз",),
}

RULES: tuple[Rule, ...] = tuple(
    rule(
        f"straggler.slowness_in_{language}",
        pattern,
        _NEEDLES[language],
        f"A sentence in {language.capitalize()} reporting that the training, or one of its "
        "members, became slower or is slower than its peers: a straggler or a slowdown to look "
        "at, with the low confidence of general words.",
        judge=_READERS[language].judge(),
        flags=re.IGNORECASE,
    )
    for language, pattern in _SLOW.items()
)
