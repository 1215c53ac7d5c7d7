"""Every link, file and section the docs and docstrings point at exists.

- Relative markdown links in README.md, docs/*.md and examples/*.md resolve to a file of the repository, and a
  `#anchor` to a heading of that file (GitHub's slugs).
- Sections cited in code, tests and docs exist: `§N` (docs/algorithms.md's numbered sections; a bare §N in
  Python cites that page) and `docs/<page>.md#anchor`.
- Repository paths named in docs and in the library's docstrings and comments exist, and nothing points at the
  design notes that live outside the repository (`reference/*.md`).
Each check also runs on a small broken tree in tmp_path, to show that it fails.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
SECTION = re.compile(r"§(\d+(?:\.\d+)?)")
DOC_ANCHOR = re.compile(r"(?<![\w/.-])(docs/[\w-]+\.md)#([\w-]+)")
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:agentrl|envs|sandboxes|configs|examples|tests|bench|scripts|docs)/[\w./-]*\w"
    r"\.(?:py|md|yaml|sh|jsonl|toml))(?![\w/*<>{}])"
)
OUTSIDE_REFERENCE = re.compile(r"(?:^|[\s(`'\"/])((?:shared/)?reference/\w+\.md|anchors\.md|peer_trl\.md)", re.I)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    """Every heading anchor of a markdown file, duplicates numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for match in HEADING.finditer(FENCE.sub("", md.read_text())):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def numbered_sections(md: Path) -> set[str]:
    """The §N labels that appear in a markdown file's headings."""
    return {s for m in HEADING.finditer(FENCE.sub("", md.read_text())) for s in SECTION.findall(m.group(2))}


def link_problems(root: Path, pages: list[Path]) -> list[str]:
    """Relative links of `pages` whose file or anchor does not exist under root."""
    problems = []
    for page in pages:
        text = INLINE_CODE.sub("", FENCE.sub("", page.read_text()))
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: ({target})"
            if not dest.exists():
                problems.append(f"{where} names a file that does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where} names a section {dest.name} does not have")
    return problems


def section_problems(root: Path, files: list[Path]) -> list[str]:
    """§N and docs/<page>.md#anchor citations in `files` that name no section of the page they cite."""
    algorithms = root / "docs" / "algorithms.md"
    numbered = numbered_sections(algorithms) if algorithms.exists() else set()
    problems = []
    for f in files:
        text = f.read_text(errors="replace")
        name = f.relative_to(root)
        if f.suffix == ".py" or f.name == "algorithms.md":
            cited = SECTION.findall(text)  # a bare §N in code cites docs/algorithms.md
        else:
            cited = re.findall(r"algorithms\.md §(\d+(?:\.\d+)?)", text)
        problems += [f"{name}: §{s} is not a section of docs/algorithms.md" for s in sorted(set(cited) - numbered)]
        for page, anchor in DOC_ANCHOR.findall(text):
            target = root / page
            if not target.exists():
                problems.append(f"{name}: {page} does not exist")
            elif anchor not in anchors(target):
                problems.append(f"{name}: {page}#{anchor} is not a section of {page}")
    return problems


def path_problems(root: Path, files: list[Path]) -> list[str]:
    """Repository paths named in `files` that do not exist, and citations of notes outside the repository."""
    problems = []
    for f in files:
        text = f.read_text(errors="replace")
        if f.suffix == ".md":
            text = FENCE.sub("", text)  # trees and transcripts in code blocks name example files
        name = f.relative_to(root)
        for ref in sorted(set(OUTSIDE_REFERENCE.findall(text))):
            problems.append(f"{name}: {ref} is not in the repository")
        for path in sorted(set(REPO_PATH.findall(text))):
            installed = re.sub(r"^agentrl/(envs|sandboxes)/", r"\1/", path)  # package-dir mapping
            if not any((base / p).exists() for base in (root, f.parent) for p in (path, installed)):
                problems.append(f"{name}: {path} does not exist")
    return problems


def repo_files(*patterns: str) -> list[Path]:
    """Files tracked in the repository that match any of the glob patterns."""
    listed = subprocess.run(["git", "ls-files", "--cached", *patterns],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return [REPO / p for p in sorted(set(listed)) if (REPO / p).is_file()]


def doc_pages() -> list[Path]:
    return [REPO / "README.md", *repo_files("docs/*.md", "examples/*.md")]


def code_files() -> list[Path]:
    """Python, YAML and shell files of the repository, without the swe_lite corpus and its data."""
    files = repo_files("*.py", "*.yaml", "*.sh", "Makefile")
    here = Path(__file__).resolve()  # its broken-tree fixtures cite missing things on purpose
    return [f for f in files if f != here and not {"corpus", "data"} & set(f.relative_to(REPO).parts)]


def test_every_relative_link_in_the_docs_resolves():
    assert link_problems(REPO, doc_pages()) == []


def test_every_cited_section_exists():
    assert section_problems(REPO, doc_pages() + code_files()) == []


def test_every_path_named_in_docs_and_docstrings_exists():
    library = [f for f in code_files() if f.relative_to(REPO).parts[0] != "tests"]  # tests name fixture files
    assert path_problems(REPO, doc_pages() + library) == []


def test_slugs_follow_github():
    assert slug("Precision (bf16 mixed precision) — `agentrl/precision.py`") == (
        "precision-bf16-mixed-precision--agentrlprecisionpy")
    assert slug("Metrics (§9)") == "metrics-9"
    assert slug("swe_lite (`bench/learn_swe.py`)") == "swe_lite-benchlearn_swepy"


def _broken_tree(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "page.md").write_text("# Page\n\n## Numbers (§1)\n\n## Twice\n\n## Twice\n")
    (root / "README.md").write_text(
        "[ok](docs/page.md#numbers-1) [twice](docs/page.md#twice-1) [web](https://example.com/x)\n"
        "[missing file](docs/nope.md) [missing section](docs/page.md#nope) `[in code](docs/nope.md)`\n"
        "```\n[in a fence](docs/nope.md)\n```\n"
    )
    (root / "mod.py").write_text('"""See docs/algorithms.md §2 and docs/page.md#nope; §1 is fine."""\n')
    (root / "notes.py").write_text('"""Facts from reference/swe_sandbox.md; the parser is agentrl/nope.py."""\n')


def test_the_checks_fail_on_a_broken_tree(tmp_path):
    _broken_tree(tmp_path)
    (tmp_path / "docs" / "algorithms.md").write_text("# Math\n\n## Advantages (§1)\n")
    assert link_problems(tmp_path, [tmp_path / "README.md"]) == [
        "README.md: (docs/nope.md) names a file that does not exist",
        "README.md: (docs/page.md#nope) names a section page.md does not have",
    ]
    assert section_problems(tmp_path, [tmp_path / "mod.py"]) == [
        "mod.py: §2 is not a section of docs/algorithms.md",
        "mod.py: docs/page.md#nope is not a section of docs/page.md",
    ]
    assert path_problems(tmp_path, [tmp_path / "notes.py"]) == [
        "notes.py: reference/swe_sandbox.md is not in the repository",
        "notes.py: agentrl/nope.py does not exist",
    ]
