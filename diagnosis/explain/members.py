"""Members of a job as people name them: a GPU, a rank, a node or a host, its peers, its kind.

The figure readers (rules_figures, rules_member_figures) find a member set apart from its peers
with these: ``member_pattern`` (``MEMBER``) names one (`GPU4`, `rank 0`, `gpu-node-12`, `dgx-03`,
`one RTX 3070`), ``PEERS`` its peers in the languages the readers know (`the other five`, `ranks
1-7`, `他の`), and ``member_kind`` the kind of member a match names.
"""

from __future__ import annotations

import re

from diagnosis.explain.rules_straggler import MEMBER_KIND
from diagnosis.model import ComponentKind as K


# a named member: `GPU4`, `GPU 2`, `rank 0`, `r3`, `node-c`, `gpu-node-12`, `host a100-14`
def member_pattern(n: str) -> str:
    """A named member's pattern; `n` names its groups apart (a pattern may name two)."""
    return (
        rf"(?P<kind{n}>GPU|card|device|node|host|rank|worker|pod|Ранг|ранг|nó|nodo|nœud)"
        r"(?:[\s#-]*(?:\d+(?!\d)|[a-z]\b)|\s+\(?[\w-]*\d[\w-]*\)?)"
        rf"|(?P<kindb{n}>node|host|gpu|pod)-[\w-]+"
        # a host by its name and number (`dgx-03`, `server-2`)
        rf"|(?P<kindh{n}>(?:dgx|server|worker|rack|box|machine)-?\d+[\w-]*)\b"
        # one of them, by its model (`One RTX 3070 in my 6-card rig`)
        rf"|\bone\s+(?P<kindgpu{n}>(?:RTX|GTX|Tesla|Radeon|RX)\s?\d{{3,4}}\w*|[AHVL]\d{{2,3}}\b)"
    )


MEMBER = member_pattern("")
"""A named member, its groups unnumbered (rules_member_figures reads members with it too)."""
PEERS = (
    r"(?:the\s+|all\s+(?:the\s+)?)?(?:other|remaining)\b[^.\n]{0,20}?|(?:all\s+)?(?:the\s+)?others\b|"
    r"(?:the\s+)?rest\b|(?:its|their)\s+(?:\d+\s+)?(?:identical\s+)?(?:peers|siblings|neighbou?rs"
    r"|twins?)\b|(?:any|every)\s+other\b|"
    r"everyone\s+else|median\s+(?:across|of)\b|"
    r"(?:ranks?|GPUs?|nodes?|hosts?|workers?|cards?|pods?)\s*\d+\s*(?:-|–|to|through)\s*\d+|"
    # a list of the others (`devices #1, #3 and #4`, `GPUs 0, 1 and 3`), the identical ones
    r"(?:ranks?|GPUs?|nodes?|hosts?|workers?|cards?|pods?|devices?)\s*#?\d+(?:\s*,\s*#?\d+)*,?\s*"
    r"(?:and|&)\s*#?\d+|(?:the\s+)?identical\s+\w+|"
    # the others in the languages the readers know
    r"他は|他の|其他|其余|其它|다른|(?:los|las)\s+(?:demás|otr[oa]s)|(?:os|as)\s+(?:outr[oa]s|demais)|"
    r"die\s+(?:anderen|übrigen)|les\s+autres|gli\s+altri|le\s+altre|остальн\w*|други\w*|"
    r"(?:node|nodo|nó)s?\s+(?:lain|lainnya)|diğer\w*|pozostał\w*|de\s+andere|(?:\w+\s+)?khác"
)
"""A member's peers (`the other five`, `ranks 1-7`, `its siblings`, `他の`, `node lain`, ...)."""
MEMBER_KINDS = {**MEMBER_KIND, "nó": K.NODE, "nodo": K.NODE, "nœud": K.NODE}
"""The kind of member each word names (rules_straggler.MEMBER_KIND and its other languages)."""


def member_kind(m: re.Match[str]) -> K:
    """The kind of member the match names (any of its `kind` groups)."""
    named = next(((k, v) for k, v in m.groupdict().items() if k.startswith("kind") and v), None)
    if named is None:
        return K.JOB
    if named[0].startswith("kindgpu"):
        return K.GPU
    return K.NODE if named[0].startswith("kindh") else MEMBER_KINDS.get(named[1].lower(), K.JOB)
