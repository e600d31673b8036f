"""Write the pages generated from JSON results: docs/benchmarks.md from benchmarks/results/ and
docs/results.md from the experiments' results.  Per script: what it measures (the first paragraph
of its docstring), its set-up and the command that reruns it, its tables (the script's ``tables``)
and its reading (the script's ``DOC``); docs/benchmarks.md ends with the listing of its results
files with when and on which code they were recorded.

    python benchmarks/docs.py            # rewrite both pages
    python benchmarks/docs.py --check    # exit 1 when a page is not what it would write
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from harness import REPO, RESULTS, read  # noqa: E402

EXPERIMENTS = REPO / "experiments"
sys.path.insert(0, str(EXPERIMENTS))
#: a word of 7 to 40 hexadecimal digits with a letter and a digit: a commit
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


@dataclass(frozen=True)
class Page:
    """A generated page: where it goes, its opening, the folder of its scripts and their names in
    the page's order, the folder their ``DOC.results`` are named from, and whether it ends with the
    listing of its results files."""

    path: Path
    intro: str
    scripts: Path
    names: tuple
    results: Path
    listing: bool


BENCHMARKS_PAGE = Page(
    path=REPO / "docs" / "benchmarks.md",
    intro="""# Benchmarks

How fast, and how accurate, against whom.  This page is generated from the JSON results in
`benchmarks/results/` by `python benchmarks/docs.py` (CI fails when it is stale); each section
says what its benchmark measures, the command that reruns it, its tables and what they say.
When and on which code each result was recorded is in the listing at the end and in the JSON;
how a number came about is in the commit log.  Timings are from a shared 2-core machine unless a
section says otherwise; peers run in their own virtual environments (`benchmarks/harness.py`).""",
    scripts=BENCHMARKS,
    names=("pgm_vs_mbi", "pgm_scale", "convergence", "defaults_by_time", "appgm_scaling", "appgm_large",
           "reconstruct_compare", "mw_default", "threading_policy", "mechanisms_vs_smartnoise",
           "mechanisms_vs_reference", "aim_budget", "aim_rounds", "aim_scoring", "aim_wide", "sampling_default",
           "steward_vs_smartnoise", "real_tables", "real_tables_floor", "numeric_bins", "fidelity_vs_sdmetrics",
           "ml_efficacy", "error_bars_coverage", "dask_scale", "counting_engines", "big_synth", "aim_out_of_core",
           "gpu_vs_mbi", "person_rows"),
    results=RESULTS,
    listing=True)
RESULTS_PAGE = Page(
    path=REPO / "docs" / "results.md",
    intro="""# Results

Reproductions of the papers' tables and figures, one section each.  This page is generated from
the experiments' JSON results by `python benchmarks/docs.py` (CI fails when it is stale); each
section says what the paper's figure is, how it was run here, the command that reruns it, its
tables and how they compare with the paper.  How a number came about is in the commit log and
the JSON.""",
    scripts=EXPERIMENTS,
    names=("iterative_figure1", "pgm_figure1", "cgm_figure2"),
    results=REPO,
    listing=False)
PAGES = (BENCHMARKS_PAGE, RESULTS_PAGE)


def what(module) -> str:
    """The first paragraph of a script's docstring, on one line."""
    return " ".join(module.__doc__.strip().split("\n\n")[0].split())


def section(name: str, page: Page) -> str:
    """A script's section of ``page``: heading, what it measures, set-up, rerun command, tables,
    reading."""
    module = importlib.import_module(name)
    doc = module.DOC
    reading = doc.reading.strip()
    if len(reading.splitlines()) > 5:
        raise ValueError(f"{name}.DOC.reading has more than five lines")
    if any(COMMIT.search(text) for text in (reading, doc.setup, what(module))):
        raise ValueError(f"{name}: a commit hash in its description, set-up or reading (history goes to the JSON)")
    parts = [f"## {doc.title} (`{page.scripts.name}/{name}.py`)", what(module)]
    if doc.setup.strip():
        parts.append(doc.setup.strip())
    parts.append(f"```\n{doc.rerun.strip()}\n```")
    if doc.results:
        parts.append(module.tables(read(*(page.results / file for file in doc.results))).strip())
    else:
        parts.append("No results recorded yet.")
    parts.append(reading)
    return "\n\n".join(parts)


def recorded(data) -> tuple[str, str]:
    """``(dates, commits)`` a results file records, whatever its layout: the range of the values of
    its ``date`` and ``when`` fields (and a run's ``Run YYYY-MM-DD`` conditions), and its commits
    (``commit`` and ``code`` fields)."""
    dates, commits = set(), set()

    def walk(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():  # a dict of commits (before and after a run) counts as commits
                walk(v, key if key in ("commit", "code") else k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            if key in ("date", "when") and re.match(r"\d{4}-\d\d-\d\d", value):
                dates.add(value[:10])
            elif key in ("commit", "code") and re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", value):
                commits.add(value)
            elif key == "conditions":
                dates.update(re.findall(r"\b(\d{4}-\d\d-\d\d) \d\d:\d\d UTC", value))
                commits.update(re.findall(r"\bcommit ([0-9a-f]{7,40}(?:\+dirty)?)", value))

    walk(data)
    span = " to ".join(sorted({min(dates), max(dates)})) if dates else "-"
    return span, ", ".join(sorted(commits)) or "-"


def listing(docs: dict) -> str:
    """Every results file: its benchmark, when and on which code it was recorded, and whether a
    newer file of the same benchmark supersedes it."""
    readers, status = {}, {}
    for name, doc in docs.items():
        for file in doc.results:
            readers.setdefault(file, []).append(name)
            status.setdefault(file, "read by the tables")
        for file in doc.superseded:
            readers.setdefault(file, []).append(name)
            status[file] = f"superseded by {doc.results[0]}"
    files = sorted(p.name for p in RESULTS.glob("*.json"))
    stray = [f for f in files if f not in readers]
    if stray:
        raise ValueError(f"results files no benchmark reads or supersedes: {', '.join(stray)}")
    lines = ["## Results files", "", "| file | benchmark | recorded | code | status |", "|---|---|---|---|---|"]
    for file in files:
        dates, commits = recorded(read(RESULTS / file)[file])
        names = ", ".join(f"`{name}.py`" for name in readers[file])
        lines.append(f"| `{file}` | {names} | {dates} | {commits} | {status[file]} |")
    return "\n".join(lines)


def render(page: Page) -> str:
    docs = {name: importlib.import_module(name).DOC for name in page.names}
    tail = [listing(docs)] if page.listing else []
    return "\n\n".join([page.intro, *(section(name, page) for name in page.names), *tail]) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    args = parser.parse_args(argv)
    stale = 0
    for page in PAGES:
        text = render(page)
        if not args.check:
            page.path.write_text(text, encoding="utf-8")
        elif not page.path.exists() or page.path.read_text(encoding="utf-8") != text:
            print(f"{page.path} is stale: run python benchmarks/docs.py", file=sys.stderr)
            stale = 1
    return stale


if __name__ == "__main__":
    sys.exit(main())
