import json
import re

import numpy as np
import pytest

from ektelo_pgm.cli import main


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


def test_csv_and_shared_dataset(tmp_path, capsys, data_dir):
    main(["run", "--data", "titanic", "--data-dir", str(data_dir), "--attrs", "Sex,Pclass,Survived"])
    assert "1304 records" in capsys.readouterr().out
    (tmp_path / "d.json").write_text(json.dumps({"x": 3, "y": 2}))
    np.savetxt(tmp_path / "t.csv", np.random.default_rng(0).integers(0, 2, (50, 2)), fmt="%d",
               delimiter=",", header="x,y", comments="")
    main(["run", "--data", str(tmp_path / "t.csv"), "--domain", str(tmp_path / "d.json")])
    assert "50 records" in capsys.readouterr().out


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit, match="unknown reconstruction \\['magic'\\]"):
        main(["run", "--reconstruct", "magic"])
    with pytest.raises(SystemExit, match="needs --domain"):
        main(["run", "--data", "x.csv"])
