"""The user guide's examples run as written, and the numbers its text states are the ones they print."""
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_guide_runs_and_states_the_std_its_custom_query_gets(monkeypatch, data_dir, capsys):
    guide = (ROOT / "docs" / "guide.md").read_text()
    monkeypatch.chdir(ROOT)  # the guide reads ../shared/data from the repository root
    namespace = {}
    for number, block in enumerate(re.findall(r"```python\n(.*?)```", guide, re.S)):
        exec(compile(block, f"guide.md python block {number}", "exec"), namespace)
    capsys.readouterr()
    stated = float(re.search(r"measurements\[0\]\.std .*= ([0-9.]+)", guide).group(1))
    std = namespace["measurements"][0].std
    assert std == pytest.approx(np.sqrt(2) * 2 / 1.0)  # Laplace(1.0), stacked sensitivity 2
    assert stated == pytest.approx(std, abs=0.005)
