"""A benchmark's accumulated runs: one JSON file ``{"meta": ..., "runs": [...]}``, a run per key,
so that a grid can run in parts and be folded together afterwards (shared by the side-by-side
benchmark scripts, run by path, so this sibling module imports as ``run_store``)."""
import json
from pathlib import Path


def load_runs(path: Path) -> list[dict]:
    """The runs recorded in ``path`` (none when it does not exist)."""
    return json.loads(path.read_text())["runs"] if path.exists() else []


def save_runs(path: Path, runs: list[dict], key, meta: dict) -> None:
    """Write ``runs``, sorted by ``key``, with ``meta`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "runs": sorted(runs, key=key)}, indent=1) + "\n")


def merge_runs(path: Path, others, key, meta: dict) -> None:
    """Fold the runs of the files ``others`` into ``path``; a run of the same key is replaced."""
    runs = {key(r): r for r in load_runs(path)}
    for other in others:
        runs.update({key(r): r for r in load_runs(Path(other))})
    save_runs(path, list(runs.values()), key, meta)
