"""docs/benchmarks.md is generated from benchmarks/results/ by benchmarks/docs.py: CI fails when it is stale."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_benchmarks_page_is_generated_from_the_results():
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "docs.py"), "--check"], capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
