"""The README's and the user guide's examples run as written, and say what they print; the user
docs read in order in twenty minutes."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from ektelo_pgm.estimate import UnmeasuredAttributeWarning

ROOT = Path(__file__).resolve().parents[1]
#: the user docs in the order they are read, and the minutes they may take at 230 words a minute
READING_PATH = ("README.md", "docs/steward.md", "docs/guide.md", "docs/privacy.md")
READING_MINUTES = 20


def test_the_guide_runs_and_states_the_std_its_custom_query_gets(capsys):
    guide = (ROOT / "docs" / "guide.md").read_text()
    namespace = {}
    for number, block in enumerate(re.findall(r"```python\n(.*?)```", guide, re.S)):
        exec(compile(block, f"guide.md python block {number}", "exec"), namespace)
    capsys.readouterr()
    stated = float(re.search(r"measurements\[0\]\.std .*= ([0-9.]+)", guide).group(1))
    std = namespace["measurements"][0].std
    assert std == pytest.approx(np.sqrt(2) * 2 / 1.0)  # Laplace(1.0), stacked sensitivity 2
    assert stated == pytest.approx(std, abs=0.005)


def test_the_architecture_page_lists_the_layout_and_its_custom_reconstruction_plugs_in(capsys):
    """Every module and package of ektelo_pgm is in the page's layout (and nothing else is), and
    the custom reconstruction written against the Reconstruct protocol runs in a Plan and in MWEM."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    layout = re.search(r"```\nektelo_pgm/\n(.*?)```", page, re.S).group(1)
    listed = {m.group(1) for line in layout.splitlines() if (m := re.match(r"  ([a-z_]+(?:\.py|/))", line))}
    package = ROOT / "ektelo_pgm"
    present = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    present |= {p.name + "/" for p in package.iterdir() if (p / "__init__.py").exists()}
    assert listed == present, (f"docs/architecture.md's layout is out of date: add {sorted(present - listed)}, "
                               f"remove {sorted(listed - present)}")
    block = re.search(r"## A reconstruction of your own.*?```python\n(.*?)```", page, re.S).group(1)
    namespace = {}
    exec(compile(block, "architecture.md custom reconstruction", "exec"), namespace)
    printed = capsys.readouterr().out
    data = namespace["data"]
    for result in (namespace["planned"], namespace["adaptive"]):
        assert result.spent == 1
        counts = result.estimate.project(["age", "income"])
        assert counts.min() >= 0 and counts.sum() == pytest.approx(len(data), rel=0.05)
        assert np.abs(counts - data.marginal(["age", "income"])).sum() < 0.25 * len(data)
    assert len(namespace["adaptive"].measurements) == 5 and printed.count("\n") == 2  # noisy total + 4 rounds


def test_the_readme_example_runs_and_draws_records_only_over_measured_attributes(capsys):
    readme = (ROOT / "README.md").read_text()
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmeasuredAttributeWarning)
        exec(compile(re.search(r"```python\n(.*?)```", readme, re.S).group(1), "README.md", "exec"), namespace)
    assert "| pgm |" in capsys.readouterr().out
    result, attrs = namespace["result"], namespace["attrs"]
    assert result.estimate.synthetic_data(20, rng=0, attrs=attrs).domain.attrs == tuple(attrs)
    with pytest.warns(UnmeasuredAttributeWarning, match="native-country"):
        result.estimate.synthetic_data(20, rng=0)


def test_the_steward_page_runs_its_python_and_its_commands_parse(monkeypatch, tmp_path, capsys):
    """The steward page's Python runs as written (MST in place of AIM, for speed) after its first
    command writes the example table, and prints the error table; each of its shell commands is
    accepted by the command line's parser."""
    import shlex

    from ektelo_pgm.cli import main, parser

    pytest.importorskip("matplotlib", reason="the page's report needs matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    page = (ROOT / "docs" / "steward.md").read_text()
    monkeypatch.chdir(tmp_path)  # the example table and the report written here
    first = re.search(r"```sh\n(ektelo-pgm example .*)\n", page).group(1)
    assert main(shlex.split(first)[1:]) == 0
    block = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert 'Synthesizer("aim"' in block
    exec(compile(block.replace('Synthesizer("aim"', 'Synthesizer("mst"'), "steward.md", "exec"), {})
    assert "worst 2-way:" in capsys.readouterr().out
    assert (tmp_path / "adult-report.html").stat().st_size > 100_000
    for sh in re.findall(r"```sh\n(.*?)```", page, re.S):
        lines = sh.replace("\\\n", " ").splitlines()
        names = dict(line.split("=", 1) for line in lines if re.match(r"[A-Z]+=", line))
        for line in lines:
            if line.startswith("ektelo-pgm "):
                argv = [names.get(word[1:], word) for word in shlex.split(line)[1:]]
                parser().parse_args(argv)


def test_the_user_docs_read_in_twenty_minutes_hold_no_commit_hash_and_no_dead_link(monkeypatch):
    """README, steward, guide and privacy together are at most 230 words a minute for twenty
    minutes (words as ``wc -w`` counts them); history stays in the commit log; every relative link
    of theirs points to a file that exists."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from docs import COMMIT  # the one definition of a commit hash in prose (benchmarks/docs.py)

    words = {}
    for name in READING_PATH:
        page = ROOT / name
        text = page.read_text(encoding="utf-8")
        words[name] = len(text.split())
        commit = COMMIT.search(text)
        assert commit is None, f"{name} names a commit ({commit and commit.group()}): history goes to the log"
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{name} links to {target}, which does not exist"
    assert sum(words.values()) <= 230 * READING_MINUTES, f"the user docs are {words} words: past twenty minutes"
