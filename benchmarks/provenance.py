"""Which code a benchmark ran: shared by the benchmark scripts (run by path, so this sibling module
imports as ``provenance``)."""
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def code_state() -> str:
    """Commit of the checkout, with '+dirty' when ektelo_pgm/ has uncommitted changes."""
    git = ["git", "-C", str(REPO)]
    try:
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        status = subprocess.run([*git, "status", "--porcelain", "ektelo_pgm"], capture_output=True, text=True,
                                check=True)
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    return commit.stdout.strip() + ("+dirty" if status.stdout.strip() else "")
