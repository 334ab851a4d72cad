"""Every link in the README, the maintainer's guide and the lab notebooks leads somewhere, and
every section of them that the lessons, the tests or the notes name by its title exists."""
import re

import pytest

import run_all

DOCS = ["README.md", "MAINTAINING.md", "week1/NOTES.md", "week2/NOTES.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # [text](target), and ![alt](image)
NAMED = re.compile(r"\b(README|MAINTAINING\.md) \(\"([^\"]+)\"\)")  # README ("a section's title")
NUMBERED = re.compile(r"\b(week[12])/NOTES\.md,? sections? (\d\d)\b")  # week1/NOTES.md, section 15


def headings(path):
    return re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)


def anchor(heading):
    """A heading's anchor, as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")


def dead_links(path):
    """The local links of a Markdown file that lead to no file, or to no heading there."""
    dead = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"https?://", target):
            continue  # (nothing downloads in the tests)
        file, _, to = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or (to and to not in map(anchor, headings(linked))):
            dead.append(target)
    return dead


def missing_sections(paths, root):
    """Each `README ("Title")`, `MAINTAINING.md ("Title")` or `weekN/NOTES.md, section NN` in
    these files that names no section of that file: (where, the name)."""
    missing, named = [], 0
    for path in paths:
        text = " ".join(path.read_text(encoding="utf-8").split())  # a name may be broken over lines
        for doc, title in NAMED.findall(text):
            named += 1
            if title not in headings(root / ("README.md" if doc == "README" else doc)):
                missing.append((path.name, f"{doc} (\"{title}\")"))
        for week, number in NUMBERED.findall(text):
            named += 1
            if not any(h.startswith(f"{number} ") for h in headings(root / week / "NOTES.md")):
                missing.append((path.name, f"{week}/NOTES.md, section {number}"))
    return missing, named


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_leads_to_a_file_and_a_heading_there(doc):
    assert dead_links(run_all.ROOT / doc) == []


def test_every_section_named_by_its_title_or_number_exists():
    root = run_all.ROOT
    paths = [*root.glob("week*/*.py"), *root.glob("common/*.py"), *root.glob("notebooks/*.py"),
             *(p for p in root.glob("tests/*.py") if p.name != "test_docs.py"), *(root / doc for doc in DOCS)]
    missing, named = missing_sections(paths, root)
    assert missing == [] and named > 40  # (every lesson's docstring names its NOTES section)


def test_a_dead_link_and_a_missing_section_are_caught(tmp_path):
    (tmp_path / "week1").mkdir()
    (tmp_path / "week1" / "NOTES.md").write_text("# Notes\n## 01 one\n")
    (tmp_path / "README.md").write_text("# A title\n## Two commands\n[here](#a-title) [there](#no-title) [x](no.md)\n"
                                        "[notes](week1/NOTES.md#01-one)\n")
    assert dead_links(tmp_path / "README.md") == ["#no-title", "no.md"]
    (tmp_path / "lesson.py").write_text('"""README ("Two commands"), README ("Three commands"),\nweek1/NOTES.md, '
                                        'section 01; week1/NOTES.md,\nsection 02."""\n')
    assert missing_sections([tmp_path / "lesson.py"], tmp_path) == (
        [("lesson.py", 'README ("Three commands")'), ("lesson.py", "week1/NOTES.md, section 02")], 4)
