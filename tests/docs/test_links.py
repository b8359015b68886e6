"""The docs stand alone: every relative link resolves inside the repository (to a heading, when it names one),
and no tracked file refers to a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKDOWN = sorted([ROOT / "README.md", ROOT / "SECURITY.md", *(ROOT / "docs").glob("*.md"),
                   *(ROOT / "helm").rglob("README.md"), *(ROOT / "examples").glob("*.md")])
FENCED = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", re.M)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCED.sub("", path.read_text(encoding="utf-8"))):
        anchor = github_anchor(heading)
        candidate, n = anchor, 0
        while candidate in found:  # GitHub numbers repeated headings
            n += 1
            candidate = f"{anchor}-{n}"
        found.add(candidate)
    return found


def links(path: Path) -> list[str]:
    text = INLINE_CODE.sub("", FENCED.sub("", path.read_text(encoding="utf-8")))
    return LINK.findall(text)


def test_there_are_links_to_check() -> None:
    assert sum(len(links(path)) for path in MARKDOWN) > 50


def test_github_anchor_rules() -> None:
    assert github_anchor("`sources[]`") == "sources"
    assert github_anchor("The OpenTelemetry Collector's file exporter") == "the-opentelemetry-collectors-file-exporter"
    assert github_anchor("Standalone: OTLP receiver") == "standalone-otlp-receiver"
    assert github_anchor("`otlp_push`") == "otlp_push"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and b"\0" not in path.read_bytes()[:8192]:
            files.append(path)
    return files


def test_no_tracked_file_refers_to_a_document_outside_the_repository() -> None:
    """Not the internal brief (by name or by its section numbers), not the folder it lives in."""
    words = ("DESI" + "GN", "STY" + "LE.md", "/work/" + "shared")
    section_ref = re.compile("\u00a7" + r"\s?\d")  # section sign + number: a section of an outside document
    found = []
    for path in _tracked_text_files():
        if path.name == "CHANGELOG.md":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if any(word in line for word in words) or section_ref.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
