"""docs/benchmarks.md and docs/results.md are generated from the JSON results by benchmarks/docs.py
(CI fails when one is stale), and benchmarks/harness.py measures a case in a fresh process."""
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import docs  # noqa: E402
import harness  # noqa: E402


def test_benchmarks_page_is_generated_from_the_results():
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "docs.py"), "--check"], capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("name", ["benchmarks.md", "results.md"])
def test_the_check_fails_on_a_stale_page(monkeypatch, tmp_path, capsys, name):
    """A table cell edited by hand in either page fails the check; writing the pages mends it."""
    copies = []
    for page in docs.PAGES:  # the pages copied aside, the one named made stale
        text = page.path.read_text(encoding="utf-8")
        copy = tmp_path / page.path.name
        copy.write_text(text.replace("| ", "|", 1) if page.path.name == name else text, encoding="utf-8")
        copies.append(dataclasses.replace(page, path=copy))
    monkeypatch.setattr(docs, "PAGES", tuple(copies))
    assert docs.main(["--check"]) == 1
    assert capsys.readouterr().err.strip() == f"{tmp_path / name} is stale: run python benchmarks/docs.py"
    assert docs.main([]) == 0 and docs.main(["--check"]) == 0


@pytest.mark.parametrize("script", docs.RESULTS_PAGE.names)
def test_the_experiments_still_run_as_scripts(script):
    done = subprocess.run([sys.executable, str(docs.EXPERIMENTS / f"{script}.py"), "--help"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("field, text, refusal", [("reading", "Faster since 5564a75.", "commit"),
                                                  ("setup", "Run on 5564a75.", "commit"),
                                                  ("reading", "1\n2\n3\n4\n5\n6", "five")])
def test_a_reading_or_setup_with_history_or_a_reading_past_five_lines_is_refused(monkeypatch, field, text, refusal):
    import cgm_figure2

    monkeypatch.setattr(cgm_figure2, "DOC", dataclasses.replace(cgm_figure2.DOC, **{field: text}))
    with pytest.raises(ValueError, match=refusal):
        docs.section("cgm_figure2", docs.RESULTS_PAGE)


def test_the_harness_measures_a_fresh_process_and_reads_its_result():
    code = ("import json, time\n"
            "block = bytearray(200 * 2**20)\n"  # 200 MB, touched
            "end = time.process_time() + 0.3\n"
            "while time.process_time() < end:\n"
            "    pass\n"
            "print(json.dumps({'done': len(block)}))\n")
    run = harness.child("-c", code, timeout=60)
    assert run.ok and run.result() == {"done": 200 * 2**20}
    assert run.peak_mb >= 200
    assert 0.3 <= run.cpu <= run.wall + 0.5
    assert run.usage() == {"process_wall": run.wall, "process_cpu": run.cpu, "process_peak_mb": run.peak_mb}


def test_the_harness_cuts_a_run_at_its_timeout():
    run = harness.run([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(30)"],
                      timeout=1.0)
    assert run.cut and not run.ok and run.returncode is None
    assert 1.0 <= run.wall < 10.0
    assert run.output.strip() == "started"
