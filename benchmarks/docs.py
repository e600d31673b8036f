"""Write docs/benchmarks.md from the JSON results in benchmarks/results/: per benchmark what it
measures (the first paragraph of its script's docstring), the command that reruns it, its tables
(the script's ``tables``) and its reading (the script's ``DOC``), then the listing of the results
files with when and on which code they were recorded.

    python benchmarks/docs.py            # rewrite docs/benchmarks.md
    python benchmarks/docs.py --check    # exit 1 when docs/benchmarks.md is not what it would write
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from harness import REPO, RESULTS, read  # noqa: E402

PAGE = REPO / "docs" / "benchmarks.md"
#: a word of 7 to 40 hexadecimal digits with a letter and a digit: a commit
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
#: the benchmarks in the order of the page
SCRIPTS = ("pgm_vs_mbi", "pgm_scale", "convergence", "defaults_by_time", "appgm_scaling", "appgm_large",
           "reconstruct_compare", "mw_default", "threading_policy", "mechanisms_vs_smartnoise",
           "mechanisms_vs_reference", "aim_budget", "aim_rounds", "aim_scoring", "sampling_default",
           "steward_vs_smartnoise", "real_tables", "real_tables_floor", "fidelity_vs_sdmetrics", "ml_efficacy",
           "error_bars_coverage", "dask_scale", "counting_engines", "big_synth", "gpu_vs_mbi")
INTRO = """# Benchmarks

How fast, and how accurate, against whom.  This page is generated from the JSON results in
`benchmarks/results/` by `python benchmarks/docs.py` (CI fails when it is stale); each section
says what its benchmark measures, the command that reruns it, its tables and what they say.
When and on which code each result was recorded is in the listing at the end and in the JSON;
how a number came about is in the commit log.  Timings are from a shared 2-core machine unless a
section says otherwise; peers run in their own virtual environments (`benchmarks/harness.py`)."""


def what(module) -> str:
    """The first paragraph of a script's docstring, on one line."""
    return " ".join(module.__doc__.strip().split("\n\n")[0].split())


def section(name: str) -> str:
    module = importlib.import_module(name)
    doc = module.DOC
    reading = doc.reading.strip()
    if len(reading.splitlines()) > 5:
        raise ValueError(f"{name}.DOC.reading has more than five lines")
    if COMMIT.search(reading) or COMMIT.search(what(module)):
        raise ValueError(f"{name}: a commit hash in its description or reading (history goes to the JSON)")
    parts = [f"## {doc.title} (`benchmarks/{name}.py`)", what(module), f"```\n{doc.rerun.strip()}\n```"]
    if doc.results:
        parts.append(module.tables(read(*(RESULTS / file for file in doc.results))).strip())
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


def render() -> str:
    docs = {name: importlib.import_module(name).DOC for name in SCRIPTS}
    return "\n\n".join([INTRO, *(section(name) for name in SCRIPTS), listing(docs)]) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/benchmarks.md is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE} is stale: run python benchmarks/docs.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
