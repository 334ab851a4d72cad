"""The shared pieces every lesson uses: one call for its command line, the words of a
verdict, and the records a check hands run_all."""
from common.cli import Lesson, int_range, knob, too_big
from common.records import CLOSE, MARK, OPEN, collected, measured, record, said

import pytest

KNOBS = [knob("--size", type=int_range(1, 100), default=4, help="a size"),
         knob("--table", action="store_true", help="also print the exact numbers")]


def parse(*argv, **options):
    return Lesson(__file__, ("week1", 1), "a lesson", KNOBS, [("--size 9", "a bigger one")], **options).args(argv)


def test_one_call_parses_the_knobs_and_knows_the_pages_settings():
    assert parse().at_defaults
    assert not parse("--size", "9").at_defaults
    assert parse("--table", print_only=("table",)).at_defaults  # --table changes only what is printed
    assert parse(figure="where the figure goes").figure is None


def test_a_limit_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        parse("--size", "90", limits=lambda args: too_big(work=args.size * 10**8, knobs=("--size",)))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the limit is 2,000,000,000 (a few seconds): lower one of --size" in err
    assert parse("--size", "9", limits=lambda args: too_big(work=args.size * 10**8)).size == 9


def test_a_verdict_is_worded_by_its_outcome_alone():
    assert [said(True), said(False), said(None)] == ["as the page says", "NOT AS THE PAGE SAYS", "not tested"]


def test_a_record_prints_nothing_for_a_learner_and_a_line_for_the_check(capsys, monkeypatch):
    with collected() as got:
        print("rows sum to 1: yes")
        assert record("rows sum to 1", True, value=1.0, threshold="within 1e-6") is True
        record("held-out right", 87 >= 90, value=87, threshold="at least 90")
        record("one-hot", None, why="too few rows")
    assert capsys.readouterr().out == "rows sum to 1: yes\n"
    assert [r["outcome"] for r in got] == ["upholds the page", "contradicts the page", "not tested here"]
    monkeypatch.setenv("LESSONS_RECORDS", "1")
    printed = measured("loss", True, "1.0", "below 2")
    out = capsys.readouterr().out
    assert out.startswith(MARK) and '"shown": "1.0"' in out and out.count("\n") == 1
    assert printed == f"{OPEN}1.0{CLOSE} (below 2)"  # where the check reads it: the number bracketed
    with pytest.raises(ValueError):
        record("a | b", True)  # a name is one field of the golden checks file


def imports_of_common(root):
    """{module: the common modules it imports, at module level or inside a function} for every
    module of common/ (`from common import shown` is an import of common itself)."""
    import ast

    graph = {}
    for path in sorted((root / "common").glob("*.py")):
        name = "common" if path.stem == "__init__" else f"common.{path.stem}"
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "common":
                found |= {f"common.{alias.name}" if node.module == "common" and (root / "common" / f"{alias.name}.py")
                          .exists() else node.module for alias in node.names}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "common"}
        graph[name] = found - {name}
    return graph


def a_circle(graph):
    """A list of modules that import one another round in a circle, or None."""
    def visit(name, path):
        for other in sorted(graph.get(name, ())):
            if other in path:
                return path[path.index(other):] + [other]
            if (circle := visit(other, path + [other])) is not None:
                return circle
        return None
    return next((circle for name in graph if (circle := visit(name, [name])) is not None), None)


def test_common_has_no_import_circle(tmp_path):
    """No module of common/ imports, at module level or inside a function, one that imports it
    back (directly or round a circle). The walk finds a circle when one is planted."""
    import run_all

    graph = imports_of_common(run_all.ROOT)
    assert {"common.kernel", "common.live", "common.notebook", "common.figures"} <= graph.keys()
    assert a_circle(graph) is None, a_circle(graph)
    assert a_circle({**graph, "common.figures": graph["common.figures"] | {"common.live"}}) is not None
