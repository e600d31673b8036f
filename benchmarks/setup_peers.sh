#!/usr/bin/env bash
# Create or update the virtual environment that holds the peer packages the benchmarks compare
# against (mbi 2.0 with jax) together with this project, installed in editable mode.
#
# Usage: benchmarks/setup_peers.sh [VENV_DIR]
# VENV_DIR defaults to $PEERS_VENV, else ../venvs/peers beside the repository (kept outside the
# repository so that the peers never end up in the project's own environment).  Safe to re-run.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-${PEERS_VENV:-$(dirname "$repo")/venvs/peers}}"

if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet "mbi==2.0.0" jax jaxlib
"$venv/bin/python" -m pip install --quiet -e "$repo"
"$venv/bin/python" -W ignore -c "import mbi, jax, ektelo_pgm; print('peers ready:', '$venv', 'jax', jax.__version__)"
