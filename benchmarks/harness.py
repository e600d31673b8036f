"""The benchmarks' one harness: a case in a fresh process (this interpreter or a peer's), its wall
and CPU seconds and the peak memory of its process tree, and JSON results with their provenance
(commit, machine, date, versions).  The scripts run by path, so this sibling module imports as
``harness``.

Peers live in their own virtual environments beside the repository, never in the project's:
``peer_python("mbi")`` is ``$PEERS_VENV/bin/python`` (default ``../venvs/peers``, made by
``benchmarks/setup_peers.sh``), likewise ``smartnoise`` (``$SMARTNOISE_VENV``, smartnoise-synth
1.0.8), ``dpmm`` (``$DPMM_VENV``, dpmm 0.1.9; both made by ``benchmarks/setup_table_peers.sh``)
and ``sdmetrics`` (``$SDMETRICS_VENV``); a new peer is one more line of ``PEERS``.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"
DATA = REPO.parent / "shared" / "data"
VENVS = REPO.parent / "venvs"

#: peer name: (environment variable naming its virtual environment, default folder under ../venvs)
PEERS = {"mbi": ("PEERS_VENV", "peers"), "smartnoise": ("SMARTNOISE_VENV", "smartnoise"),
         "sdmetrics": ("SDMETRICS_VENV", "sdmetrics"), "dpmm": ("DPMM_VENV", "dpmm")}


def peer_python(peer: str) -> Path:
    """The interpreter of ``peer``'s own virtual environment (it may not exist on this machine)."""
    variable, folder = PEERS[peer]
    return Path(os.environ.get(variable, VENVS / folder)) / "bin" / "python"


# ----------------------------------------------------------------------------------------------
# Provenance
# ----------------------------------------------------------------------------------------------


def commit_of(checkout: Path = REPO) -> str:
    """Short commit of a git checkout, with '+dirty' when its ektelo_pgm/ has uncommitted changes."""
    git = ["git", "-C", str(checkout)]
    try:
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        status = subprocess.run([*git, "status", "--porcelain", "ektelo_pgm"], capture_output=True, text=True,
                                check=True)
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return commit.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def code_state() -> str:
    """The commit of this checkout (see :func:`commit_of`)."""
    return commit_of(REPO)


def now() -> str:
    """The date and time, UTC, to the second (ISO 8601)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def newest(runs: list[dict], key) -> list[dict]:
    """The latest run (by its ``when``) of each ``key(run)``: what a docs table shows of a history of
    runs of several versions of the code (the JSON keeps them all)."""
    latest: dict = {}
    for run in runs:
        k = key(run)
        if k not in latest or run["when"].replace("T", " ") > latest[k]["when"].replace("T", " "):
            latest[k] = run
    return [latest[k] for k in sorted(latest)]


def versions(*packages: str) -> dict:
    """Installed version of each package (None where it is not installed), python's included."""
    out = {"python": platform.python_version()}
    for package in packages:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = None
    return out


def provenance(*packages: str) -> dict:
    """Which code ran where and when: commit, machine, CPUs, date, load average and versions of
    numpy, numba and ``packages``."""
    return {"commit": code_state(), "machine": platform.platform(), "cpus": os.cpu_count(), "date": now(),
            "load_average": [round(x, 2) for x in os.getloadavg()], "versions": versions("numpy", "numba", *packages)}


def save(path: Path, payload: dict, *packages: str) -> None:
    """Write ``payload`` with its ``provenance`` (see :func:`provenance`) to ``path`` as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, "provenance": provenance(*packages)}, indent=1) + "\n")


def read(*paths: Path, name: str | None = None) -> dict:
    """``{file name: its JSON}`` of results files, as a benchmark's ``tables`` takes them; ``name``
    files a single path under another name (a run recorded elsewhere than the default file)."""
    return {name or Path(p).name: json.loads(Path(p).read_text()) for p in paths}


def load_runs(path: Path) -> list[dict]:
    """The runs recorded in ``path`` (``{"meta": ..., "runs": [...]}``; none when it does not exist)."""
    return json.loads(path.read_text())["runs"] if path.exists() else []


def save_runs(path: Path, runs: list[dict], key, meta: dict) -> None:
    """Write ``runs``, sorted by ``key``, with ``meta`` and the provenance to ``path``: a grid's
    runs accumulate there, a run per key, so that it can run in parts."""
    save(path, {"meta": meta, "runs": sorted(runs, key=key)})


def merge_runs(path: Path, others, key, meta: dict) -> None:
    """Fold the runs of the files ``others`` into ``path``; a run of the same key is replaced."""
    runs = {key(r): r for r in load_runs(path)}
    for other in others:
        runs.update({key(r): r for r in load_runs(Path(other))})
    save_runs(path, list(runs.values()), key, meta)


# ----------------------------------------------------------------------------------------------
# Timing in this process
# ----------------------------------------------------------------------------------------------


@dataclass
class Clock:
    """Wall and CPU seconds (every thread of this process) since ``start``; frozen by ``stop``."""

    wall: float = 0.0
    cpu: float = 0.0
    _start: tuple = field(default_factory=lambda: (time.perf_counter(), time.process_time()))

    def elapsed(self) -> float:
        """Wall seconds since the start, while the clock runs."""
        return time.perf_counter() - self._start[0]

    def stop(self) -> "Clock":
        self.wall, self.cpu = time.perf_counter() - self._start[0], time.process_time() - self._start[1]
        return self


@contextmanager
def clock():
    """``with clock() as c: ...``: then ``c.wall`` and ``c.cpu`` are the block's seconds."""
    c = Clock()
    try:
        yield c
    finally:
        c.stop()


def timed(run):
    """``(run(), wall seconds, CPU seconds)``."""
    with clock() as c:
        out = run()
    return out, c.wall, c.cpu


def peak_mb() -> float:
    """Peak resident memory of this process so far, MB: ``VmHWM`` of /proc/self/status, which starts
    afresh at exec (Linux's ``ru_maxrss`` keeps the forking parent's size across exec), else
    ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ----------------------------------------------------------------------------------------------
# A case in a fresh process
# ----------------------------------------------------------------------------------------------


@dataclass
class Run:
    """A finished child process: ``returncode`` (None when cut off at the timeout), its wall
    seconds, CPU seconds (user + system) and peak resident MB over its whole life, from
    ``wait4``: the child and the descendants it waited for, the largest process of its tree
    (at least the parent's size at the fork); ``output`` and ``errors``: its standard output and
    error (both in ``output`` when they went to one log)."""

    returncode: int | None
    wall: float
    cpu: float
    peak_mb: float
    output: str
    errors: str = ""
    cpus_wanted_elsewhere: list = field(default_factory=list)

    @property
    def cut(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def result(self):
        """The JSON object on the last line of the output (None when there is none)."""
        lines = self.output.strip().splitlines()
        try:
            return json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            return None

    def tail(self, characters: int = 2000) -> str:
        """The end of the standard error, else of the output."""
        return (self.errors or self.output)[-characters:]

    def usage(self) -> dict:
        """The process's wall, CPU seconds and peak MB as the grids record them."""
        return {"process_wall": self.wall, "process_cpu": self.cpu, "process_peak_mb": self.peak_mb}


def _runnable_elsewhere(pid: int) -> int:
    """Runnable threads on the machine (``/proc/loadavg``) less those of process ``pid`` and the
    reading thread."""
    with open("/proc/loadavg") as f:
        runnable = int(f.read().split()[3].split("/")[0])
    ours = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ours += stat[stat.rindex(")") + 2] == "R"
    return max(runnable - ours - 1, 0)


def run(command, *, env: dict | None = None, timeout: float | None = None, log: Path | None = None,
        cwd: Path | None = None, watch: bool = False, check: bool = False) -> Run:
    """Run ``command`` (a list) in a fresh process, its standard output and error together to
    ``log`` (apart, to temporary files, when None), killed after ``timeout`` seconds.  ``env``: variables added to
    this process's; ``PYTHONPATH`` starts with the checkout, so a child runs this checkout's
    ``ektelo_pgm``, then keeps what this process was given (packages installed beside, as on a GPU
    machine).  ``watch``: sample every second how many CPUs other work wanted.  ``check``: raise on
    a non-zero exit, with the end of the output."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    environment.update(env or {})
    with (open(log, "w+") if log is not None else tempfile.TemporaryFile("w+")) as sink, \
            tempfile.TemporaryFile("w+") as errors:
        began = time.perf_counter()
        child = subprocess.Popen([str(c) for c in command], env=environment, stdout=sink,
                                 stderr=subprocess.STDOUT if log is not None else errors, cwd=cwd)
        others, done = [], threading.Event()

        def sample():
            while not done.wait(1.0):
                try:
                    others.append(_runnable_elsewhere(child.pid))
                except (OSError, ValueError):
                    pass

        watcher = threading.Thread(target=sample, daemon=True)
        if watch:
            watcher.start()
        cut = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if timeout is not None and time.perf_counter() - began > timeout:
                child.kill()
                _, status, usage = os.wait4(child.pid, 0)
                cut = True
                break
            time.sleep(0.05)
        wall = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        done.set()
        if watch:
            watcher.join()
        sink.seek(0)
        errors.seek(0)
        output, error_text = sink.read(), errors.read()
    finished = Run(None if cut else child.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                   output, error_text, others)
    if check and not finished.ok:
        raise RuntimeError(f"{Path(str(command[1] if len(command) > 1 else command[0])).name} exited with "
                           f"{'a timeout' if finished.cut else finished.returncode}: {finished.tail()}")
    return finished


def child(script: str | Path, *args, python: Path | str = sys.executable, **options) -> Run:
    """Run ``python script args`` in a fresh process (see :func:`run` for ``options``): a benchmark's
    own worker mode, in this interpreter or a peer's."""
    return run([python, script, *args], **options)


# ----------------------------------------------------------------------------------------------
# A script's section of its generated page (written by benchmarks/docs.py)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """A script's section of docs/benchmarks.md (a benchmark) or docs/results.md (an experiment).
    What it measures is the first paragraph of the script's docstring; the tables come from the
    script's ``tables(results)``, ``results`` mapping each file name of ``results`` to its JSON.

    ``title``: the heading; ``rerun``: the command that reruns it, from the repository root;
    ``reading``: what the tables say, at most five lines, no history; ``results``: the files the
    tables read (of benchmarks/results/ for a benchmark, paths from the repository root for an
    experiment); ``superseded``: older files of the same benchmark, kept for their history and named
    so in the listing; ``setup``: how it was run, in a few lines (an experiment: the paper's figure,
    the data, the budget), no history."""

    title: str
    rerun: str
    reading: str
    results: tuple = ()
    superseded: tuple = ()
    setup: str = ""
