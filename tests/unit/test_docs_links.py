"""The front door and the docs hold together: every relative link resolves, and the README's
two commands are the Makefile's targets that CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").glob("*.md")],
)
# [text](target) and ![alt](target); the target ends at the first space or closing parenthesis
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose(text: str) -> str:
    """Return the text without fenced code blocks and inline code (links there are examples)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return "\n".join(kept)


def slug(heading: str) -> str:
    """Return GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Return the anchors a page's headings give (repeats get -1, -2 ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page.read_text()).splitlines():
        m = HEADING.match(line)
        if m is None:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def relative_links(page: Path) -> list[str]:
    """Return the page's link targets that point into the repository."""
    text = re.sub(
        r"`[^`\n]*`", lambda m: m.group(0) if "](" in m.group(0) else "``", prose(page.read_text())
    )
    targets = [m.group(1) for m in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_link_check_sees_links_and_catches_a_broken_one(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n\n## A `code` heading, too\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) ![img](there.md) [web](https://example.com) [self](#top)\n"
        "```sh\n[in code](missing.md)\n```\n"
        "[gone](missing.md) [anchor](there.md#a-code-heading-too) [bad](there.md#nope)\n"
    )
    assert relative_links(page) == [
        "there.md",
        "there.md",
        "#top",
        "missing.md",
        "there.md#a-code-heading-too",
        "there.md#nope",
    ]
    assert anchors(tmp_path / "there.md") == {"there", "a-code-heading-too"}


def test_readme_commands_are_the_makefile_targets_ci_runs() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Two commands")[1].split("```sh\n")[1].split("```")[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    makefile = (REPO / "Makefile").read_text()
    recipes = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^([\w-]+):[^\n]*\n\t([^\n]+)", makefile, re.MULTILINE)
    }
    assert recipes["demo"] == "bash deploy/dev.sh demo"
    assert recipes["test"] == "bash deploy/dev.sh test"
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[-1].strip() == "make test"
    for fast in ("lint", "typecheck", "unit"):
        assert fast in recipes, f"make {fast} is documented in docs/style.md"
