import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from ektelo_pgm.cli import main

ROOT = Path(__file__).resolve().parents[1]


def errors(output: str) -> dict:
    return {m[0]: float(m[1]) for m in re.findall(r"^\| ([\w-]+) \| ([0-9.e+-]+) \|", output, re.M)}


def test_default_run_prints_the_least_squares_workload_error(capsys):
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "10000 records" in out and "epsilon spent 1 of 1" in out
    error = errors(out)["least-squares"]
    assert 0 < error < 0.5


def test_compares_operators_on_the_same_measurements(capsys):
    main(["run", "--records", "3000", "--attrs", "sex,race,income", "--reconstruct", "least-squares", "pgm",
          "--epsilon", "1000"])
    table = errors(capsys.readouterr().out)
    assert set(table) == {"least-squares", "pgm"}
    assert max(table.values()) < 0.01  # almost no noise: both recover the marginals


def test_same_seed_same_output(capsys):
    main(["run", "--records", "2000", "--seed", "4"])
    first = errors(capsys.readouterr().out)
    main(["run", "--records", "2000", "--seed", "4"])
    assert errors(capsys.readouterr().out) == first


def test_csv_and_shipped_dataset(tmp_path, capsys):
    main(["run", "--data", "titanic", "--attrs", "Sex,Pclass,Survived"])
    assert "1304 records" in capsys.readouterr().out
    (tmp_path / "d.json").write_text(json.dumps({"x": 3, "y": 2}))
    np.savetxt(tmp_path / "t.csv", np.random.default_rng(0).integers(0, 2, (50, 2)), fmt="%d",
               delimiter=",", header="x,y", comments="")
    main(["run", "--data", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json")])
    assert "50 records" in capsys.readouterr().out


def test_bad_arguments_are_named_in_one_line_with_a_failing_exit_code(capsys, tmp_path):
    (tmp_path / "raw.csv").write_text("age,sex\n39, Male\n50, Female\n")
    (tmp_path / "d.json").write_text(json.dumps({"age": 100, "sex": 2}))
    cases = [(["--reconstruct", "magic"], r"unknown reconstruction \['magic'\]"),
             (["--data", "x.csv"], "needs --domain"),
             (["--data", str(tmp_path / "raw.csv"), "--domain", str(tmp_path / "d.json")],
              r"column 'sex' row 0 holds 'Male', not an integer code; .*TableEncoder"),
             (["--data", str(tmp_path / "none.csv"), "--domain", str(tmp_path / "d.json")], "No such file"),
             (["--data", "nosuch"], "no dataset 'nosuch'")]
    for arguments, message in cases:
        assert main(["run", *arguments]) == 1
        err = capsys.readouterr().err
        assert re.fullmatch(f"ektelo-pgm: error: .*{message}.*\n", err), err


def test_the_command_prints_no_traceback_for_a_raw_csv(tmp_path):
    (tmp_path / "raw.csv").write_text("age,sex\n39, Male\n")
    done = subprocess.run([sys.executable, "-m", "ektelo_pgm.cli", "run", "--data", str(tmp_path / "raw.csv")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "TableEncoder" in done.stderr
