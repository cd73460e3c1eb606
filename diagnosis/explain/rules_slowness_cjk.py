"""A slowdown told in Chinese, Japanese or Korean words: the shape of rules_slowness, read in
each.

A sentence (up to 。！？； or a line's end) reports a slowdown when it has a word of slowing with
a subject in the same sentence, no negation just before the word, no explanation and nothing slow
that is not training (``Reader``: one set of patterns a language).

- Chinese: 变慢, 减慢, 越跑越慢, 速度下降, 耗时增加, 时间激增, 差异很大, 步调不一致, or fast
  at first and slow later (刚开始...快，后续...慢); subjects 训练, 速度, step, 轮 (an epoch),
  rank, 卡, 节点; negations 没有, 不, 未; explanations 正常, 预期, 因为; not training:
  推理, 下载, 编译. A plain 慢 (``训练速度有点慢``) is not a word of slowing: it says how
  fast, not that it changed.
- Japanese: 遅くなった, 速度が低下, 時間が...増えた (長くなった), ...より遅い; subjects 学習,
  速度, イテレーション, ステップ, エポック, GPU, ノード; negations ない, ません after the verb;
  explanations 想定, 予想, 正常, 仕様, and a condition (すると, 場合: what happens if); not
  training: 推論, ダウンロード, コンパイル.
- Korean: 느려졌다, 느려지다, 속도 저하, 속도가 떨어지다, 시간이 오래 걸리다 (more and more);
  subjects 학습, 훈련, 속도, GPU, 에폭; negations 안, 없 before the verb, 않, 못 after it
  (느려지지 않았다); explanations 정상, 예상, 때문.

Guarantees: the rules run right after the English one, after every other rule; the verdict is
rules_slowness.slowed's: a straggler warning of the family's lowest confidence, naming the member
the sentence names, else the job.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_slowness import slowed

_SLOW_ZH = (
    r"(?:[变變]慢|奇慢|拖下来|拖后腿|拖累|[变變]得(?:很|非常|特别|十分|越来越|越來越|巨|超|极其|极|贼|好)?慢|[减減]慢|越\w{1,2}越慢|慢了很多|慢很多|拖慢"
    # suddenly so slow (`速度突然这么慢`)
    r"|突然(?:间)?(?:这么|那么|变得?|很|非常|特别|好)慢"
    # a rate that drops to a figure (掉到剩十几 samples/s), a time or ETA that keeps growing
    # (not a time that falls to a figure: `后面会降到4s左右`, the steps got faster)
    r"|(?:掉|降|跌)(?:到|至)(?![^。！？，,]{0,6}?[\d.]+\s*(?:s|秒|ms|毫秒|分钟|分|min|小时|h)(?![a-zA-Z]))|(?:ETA|eta)\w{0,3}(?:不断|一直|持续)?(?:增加|变长|上升)"
    # (not the loss's 下降速度: how fast it converges)
    r"|(?<!下降)(?<!收敛)速度(?:明显|大幅|显著|严重|急剧|大大|突然)?地?(?:下降|降低)"
    r"|(?:耗时|时间)(?:也|都|还)?(?:一直|不断|持续|逐渐)?(?:明显|大幅|显著)?(?:增加|变长)"
    r"|(?:耗时|时间|用时)[^。！？，,]{0,16}?(?:涨|增|升|增加|增长)(?:到|至)"
    # a time that doubles (`第二次推理耗时几乎翻倍`)
    r"|(?:耗时|时间|用时)[^。！？，,]{0,6}?翻倍"
    # a time that surges (`计算时间会激增`)
    r"|(?:耗时|时间|用时)[^。！？，,]{0,4}?(?:激增|暴增|剧增|猛增|飙升)"
    # a time or a rate that keeps changing, its figures a clause away
    # (`从一开始的70秒，不断增加到500秒`)
    r"|(?:不断|持续|逐渐|一直)(?:增加|增长|上升|变长)(?:到|至)"
    r"|越来越长|差异很大|差距很大|步调不一致"
    # a speed that falls as the run's count or time grows (`推理速度随服务启动后请求的次数上升降低`)
    r"|速度随(?:着)?[^。，,]{0,20}?(?:次数|时间|运行)[^。，,]{0,6}?(?:上升|增加|增多|变长|推移)而?"
    r"(?:降低|下降|变慢|减慢)"
    # one card of two nearly idle beside the other (`一张卡的利用率很低，3%，4%左右，另外一张利用率
    # 比较高100%`, `rank=0的卡GPU利用率为0，其余卡利用率100%`)
    # (the others named after the member: looked for from the member on, a line stays linear)
    r"|(?:(?:其中)?一[块张个台]|rank\s*=?\s*\d+|GPU\s*\d+|\d+号)(?=[^。！？]*(?:另外|另一|其他|其余|别的))"
    r"(?:卡|GPU|显卡)?[^。！？，,]{0,8}利用率\s*(?:为|是)?\s*(?:极低|很低|特别低|非常低|接近\s*0|0(?![\d.]))"
    # one card busy, the others idle (`一张跑满，一张空载`, `只有一张卡有利用率`, `只有第一块卡的gpu
    # 利用率高，其他的很低`, `0卡占用率51% 其它7张卡占用率0-1`)
    r"|一[张块个台](?:卡|GPU|显卡)?\s*(?:跑满|满载|满负荷)[，,、\s]*(?:另)?一[张块个台](?:卡|GPU|显卡)?\s*"
    r"(?:空载|空闲|闲置)"
    r"|只有(?:一|第一)[张块个台](?:卡|GPU|显卡)[^。！？，,]{0,8}?(?:有)?(?:gpu)?(?:利用率|使用率)"
    r"|(?:第一[块张个台]|\d+号?卡|一[张块]卡)[^。！？]{0,12}?(?:利用率|占用率|使用率)[^。！？]{0,10}?"
    r"(?:其[他它余]|另外)[^。！？]{0,12}?(?:很低|极低|为\s*0|0\s*[-~]\s*1|0\s*%)"
    # two cards named, one busy and one idle (`gpu_0利用率为100%，gpu_1利用率为0`)
    r"|(?:[gG][pP][uU]|卡)_?\s*\d+[^。！？，,]{0,4}?(?:利用率|使用率|占用率)\s*(?:为|是)?\s*(?:100|9\d)\s*%?"
    r"[，,、；;\s]*(?:[gG][pP][uU]|卡)_?\s*\d+[^。！？，,]{0,4}?(?:利用率|使用率|占用率)\s*(?:为|是)?\s*0(?![\d.])"
    r"|(?:[gG][pP][uU]|卡)_?\s*\d+[^。！？，,]{0,4}?(?:利用率|使用率|占用率)\s*(?:为|是)?\s*0(?![\d.])%?"
    r"[，,、；;\s]*(?:[gG][pP][uU]|卡)_?\s*\d+[^。！？，,]{0,4}?(?:利用率|使用率|占用率)\s*(?:为|是)?\s*(?:100|9\d)\s*%"
    # the others at 100 %, the remaining one at 0 (`3张卡利用率一直是100%，剩下那张一直是0%`)
    r"|(?:利用率|使用率|占用率)[^。！？]{0,8}?(?:100|9\d)\s*%[，,、\s]*(?:剩下|剩余|另外|其余)(?:的|那)?"
    r"[一1]?[张块个台]?(?:卡|GPU|显卡)?[^。！？]{0,8}?(?<![\d.])0\s*%"
    # one card of several with no load (`启用多显卡会随机摆烂一张显卡，...，负载几乎为0`)
    r"|多(?:张)?(?:显卡|卡|GPU)[^。！？]{0,16}?一[张块个台](?:显卡|卡|GPU)[^。！？]{0,24}?负载"
    r"(?:几乎|接近)?\s*(?:为|是)?\s*0(?![\d.])"
    # one card of several nearly idle (`一块正常，另一块GPU的利用率极低接近0`)
    r"|(?:另外一|另一|其中一|有一|只有一)[块张个台]?(?:卡|GPU|显卡)?[^。！？]{0,12}利用率[^。！？]{0,4}"
    r"(?:极低|很低|特别低|非常低|接近\s*0|为\s*0|是\s*0)"
    # fast at first, slow later (刚开始训练速度快，后续训练速度很慢)
    # (慢慢 is `gradually`, not slow; a negation before the 慢 denies it)
    r"|(?:刚开始|一开始|开始时?|起初|前期|前几个?|前面)[^。！？]{0,12}快[^。！？]{0,24}?"
    r"(?:后续|后来|后面|之后|后期|然后)(?:(?![不没未无])[^。！？]){0,12}(?<!慢)慢(?!慢))"
)
_SUBJECT_ZH = re.compile(
    r"[训訓][练練]|微[调調]|速度|step|迭代|epoch|[轮輪]|rank|GPU|卡|[节節]点|机器|耗[时時]|吞吐|s/it|it/s"
    r"|samples?/s|images?/s|ETA|FPS|帧率|算力|调用|请求|推理|部署|利用率|使用率|占用率",
    re.I,
)
_DENIED_ZH = re.compile(r"(?:不|没|没有|未|无|并非)\w{0,3}$")
# (back to normal only after a restart is a workaround, not an explanation; all normal at first
# is the state before the slowdown; a time normal now and then is the slowdown's gaps)
_EXPLAINED_ZH = re.compile(
    # (a question whether it is normal asks, it explains nothing: `这是正常现象吗？`, `是否正常`)
    # (one member said normal beside another is the comparison: `一块正常，另一块...`)
    r"(?<!恢复)(?<!一切)(?<!时间)(?<!有时)(?<!偶尔)(?<!是否)(?<!正不)(?<!一块)(?<!一张)(?<!一个)"
    r"(?<!其他)(?<!其余)(?<!均)(?<!都)(?<!都是)(?<!均为)"
    r"正常(?!(?:现象|情况|的)?\s*(?:吗|嘛|么|呢|不|\?|？))|"
    # the speaker's own change (`我把 batch size 从 32 改成 128`, `开了 gradient checkpointing`)
    r"(?:我|我们)(?:把|将)[^。！？]{0,40}(?:改|调|换|加大|增大|设)|开(?:了|启了?)\s*[^。！？]{0,12}"
    r"(?:checkpointing|重计算)|(?<!重启)(?<!重启后)(?<!重启后才)(?<!重启之后)(?<!重启之后才)恢复正常"
    r"|[预預]期|意料之中|因[为為]|由于|代价"
    # only one card used, by the speaker's choice (`我只用一块卡`)
    r"|只(?:用|使用)了?\s*(?:一|1)\s*[块张个]"
    # it follows the load (`跟 QPS 曲线完全一致`)
    r"|(?:流量|负载|QPS|请求量)[^。]{0,12}(?:一致|吻合)|随着?(?:流量|负载|QPS|请求量)"
)
# the speed said to have come back (`训练速度已经恢复了`), not only after a restart
_ENDED_ZH = re.compile(
    r"(?<!重启后)(?<!重启之后)(?:速度|性能|耗时|吞吐)[^。！？，,]{0,8}?(?:已经|已)(?:基本)?恢复(?![^。！？]{0,4}不)"
)
# inference slow from the start is a service's load; inference that slows as it runs, or one
# card of it behind the other, is read
_NOT_TRAINING_ZH = re.compile(
    # (nor one card against the other: a straggler whatever the work)
    # (`每次推理`, each request's inference, is the service's work over time)
    r"(?<!每次)(?<!第二次)(?<!再次)推理(?![^。]*(?:一段时间|持续|越来越|逐渐|重启|另外一|另一[块张个]|次数|时间推移|运行时间"
    r"|突然|第二次|再次))"
    r"|下载|编译|加载模型"
    # the first epoch said slow, which prepares the data (tokenize, cache): a warm-up
    r"|(?:第一个|首个|第一)\s*(?:epoch|轮)\s*(?:会|比较|很|特别)?(?:变得)?\w{0,2}慢"
)


_SLOW_KO = (
    r"(?:느려(?:졌|지|짐|져|집)|속도\s*(?:가\s*)?(?:많이\s*|현저히\s*|크게\s*|급격히\s*)?(?:저하|떨어|감소|줄어)"
    # a hash rate, a performance or a throughput that keeps falling
    # (`해시레이트가 ... 계속 떨어지고`)
    r"|(?:해시\s*레이트|성능|처리량)\s*(?:가|이)\s*[^.。]{0,20}?(?:저하|떨어|감소|줄어)"
    r"|(?:시간|소요\s*시간)\s*(?:이\s*)?(?:점점\s*|계속\s*)?(?:(?:두\s*)?배로\s*)?(?:늘어|증가|길어)"
    # the last card of several idle (`3장은 사용률이 100%이고 나머지 1장은 계속 0%입니다`)
    r"|나머지\s*(?:1|한)\s*장[^.。]{0,12}?(?<![\d.])0\s*%)"
)
_SUBJECT_KO = re.compile(
    r"학습|훈련|속도|GPU|에폭|epoch|step|스텝|이터레이션|노드|카드|해시\s*레이트|채굴|추론|이미지당|요청",
    re.I,
)
_DENIED_KO = re.compile(r"(?:안|않|없|아니)\w{0,2}\s*$")
_EXPLAINED_KO = re.compile(r"정상(?!인가요|인가|일까요|입니까|이에요\?)|예상|때문")
# (inference that slows as it runs, after hours or calls, is read: `몇 시간 돌리고 나면 ...`)
_NOT_TRAINING_KO = re.compile(
    r"추론(?![^。\n]*(?:시간\s*돌리|돌리고\s*나면|계속|점점|지날수록))|다운로드|컴파일"
)


_SLOW_JA = (
    r"(?:遅くな(?:った|って|り|る)|速度が(?:大幅に|著しく|かなり|徐々に|だんだん|次第に)?(?:低下|落ち|下が)"
    r"|(?:時間|所要時間)が[^。！？]{0,20}?(?:増え|増加|長くな|伸び)"
    # one card of several idle (`1枚だけGPU使用率がずっと0%のままです`)
    r"|(?:1|一)(?:枚|台|つ)だけ[^。！？]{0,20}?(?:使用率|利用率)[^。！？]{0,10}?(?<![\d.])0\s*%"
    r"|より(?:も)?(?:大幅に|かなり|明らかに|ずっと)?遅い"
    # one member of several slow (`4枚中1枚だけ明らかに遅い`), a run that gets heavy (`重くなる`)
    r"|(?:(?:\d|一)(?:枚|台)|(?:GPU|ノード|ランク|カード)\s*\d+)だけ(?:が|は)?(?:明らかに|かなり|ずっと|極端に|少し)?"
    r"遅い|重くな(?:った|って|り|る))"
)
_SUBJECT_JA = re.compile(
    r"学習|訓練|速度|イテレーション|ステップ|エポック|GPU|ノード|ランク|カード|スループット|it/s|s/it|生成"
    r"|\d\s*枚",
    re.I,
)
_DENIED_JA = re.compile(r"(?!)")  # Japanese denies after the verb (遅くならない)
_EXPLAINED_JA = re.compile(
    r"想定|予想|正常(?!でしょうか|ですか|なのでしょうか|なのか)|仕様|期待通り|すると|場合|トレードオフ"
)
_NOT_TRAINING_JA = re.compile(r"推論|ダウンロード|コンパイル")


@dataclass(frozen=True)
class Reader:
    """One language's patterns for a slowdown told in its words."""

    subject: re.Pattern[str]
    denied: re.Pattern[str]
    explained: re.Pattern[str]
    not_training: re.Pattern[str]
    denied_after: re.Pattern[str] | None = None  # a negation that follows the verb (Korean)
    ended: re.Pattern[str] | None = None  # anywhere in the text: the slowdown is over

    def judge(self) -> Callable[[re.Match[str]], Verdict | None]:
        """Return the rule's judge: the module doc's shape, in this language."""

        def reported(m: re.Match[str]) -> Verdict | None:
            body = m.string
            start = max((x.end() for x in _SENTENCE.finditer(body, 0, m.start())), default=0)
            end_at = _SENTENCE.search(body, m.end())
            sentence = body[start : end_at.start() if end_at else len(body)]
            if self.denied.search(body[start : m.start()]) or not self.subject.search(sentence):
                return None
            if self.denied_after is not None and self.denied_after.match(body, m.end()):
                return None
            if self.explained.search(sentence) or self.not_training.search(sentence):
                return None
            if self.ended is not None and self.ended.search(body):
                return None
            return slowed(sentence)

        return reported


_SENTENCE = re.compile(r"[。！？；!?;\n]|\.\s")
CHINESE = Reader(_SUBJECT_ZH, _DENIED_ZH, _EXPLAINED_ZH, _NOT_TRAINING_ZH, ended=_ENDED_ZH)
JAPANESE = Reader(
    _SUBJECT_JA, _DENIED_JA, _EXPLAINED_JA, _NOT_TRAINING_JA, re.compile(r"\w?\s*(?:ない|ません)")
)
KOREAN = Reader(
    _SUBJECT_KO, _DENIED_KO, _EXPLAINED_KO, _NOT_TRAINING_KO, re.compile(r"\w{0,2}\s*(?:않|못)")
)


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.slowness_in_chinese",
        _SLOW_ZH,
        (
            *("慢", "下降", "降低", "增加", "变长", "越来越长", "差异", "差距", "步调"),
            *("掉到", "掉至", "降到", "降至", "跌到", "跌至", "到", "至"),
            *("激增", "暴增", "剧增", "猛增", "飙升", "利用率", "使用率", "占用率", "速度随"),
            *("翻倍", "空载", "空闲", "闲置", "负载"),
        ),
        "A Chinese sentence reporting that the training, or one of its members, became "
        "slower (变慢, 减慢, 速度下降, 耗时增加, 各个 rank 差异很大): a straggler or a "
        "slowdown to look at, with the low confidence of general words.",
        judge=CHINESE.judge(),
    ),
    rule(
        "straggler.slowness_in_japanese",
        _SLOW_JA,
        ("遅く", "速度", "時間", "遅い", "だけ", "重くな"),
        "A Japanese sentence reporting that the training, or one of its members, became slower "
        "(遅くなった, 速度が低下, 時間が増えた, 他より遅い): a straggler or a slowdown to look at, "
        "with the low confidence of general words.",
        judge=JAPANESE.judge(),
    ),
    rule(
        "straggler.slowness_in_korean",
        _SLOW_KO,
        ("느려", "속도", "시간", "소요", "해시", "성능", "처리량", "나머지"),
        "A Korean sentence reporting that the training, or one of its members, became slower "
        "(느려졌다, 속도 저하, 시간이 점점 늘어나다): a straggler or a slowdown to look at, with "
        "the low confidence of general words.",
        judge=KOREAN.judge(),
    ),
)
