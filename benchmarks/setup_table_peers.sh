#!/usr/bin/env bash
# Create or update the virtual environments of the peers that benchmarks/real_tables.py runs beside
# this project's synth: smartnoise-synth (its MST) and dpmm (its MST and AIM), one environment each,
# pinned, outside the repository (they never enter the project's own environment).
#
# Usage: benchmarks/setup_table_peers.sh [smartnoise|dpmm ...]   (default: both)
# The folders are $SMARTNOISE_VENV and $DPMM_VENV, by default ../venvs/smartnoise and ../venvs/dpmm
# beside the repository (harness.peer_python).  Safe to re-run.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venvs="$(dirname "$repo")/venvs"

install() {  # install VENV PACKAGE...: create VENV when absent, then install the pinned packages
    local venv="$1"; shift
    if [ ! -x "$venv/bin/python" ]; then
        mkdir -p "$(dirname "$venv")"
        python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=(smartnoise dpmm)
for name in "${peers[@]}"; do
    case "$name" in
        smartnoise)
            venv="${SMARTNOISE_VENV:-$venvs/smartnoise}"
            install "$venv" "smartnoise-synth==1.0.8"
            "$venv/bin/python" -W ignore -c "import snsynth; print('smartnoise ready:', '$venv')" ;;
        dpmm)
            venv="${DPMM_VENV:-$venvs/dpmm}"
            install "$venv" "dpmm==0.1.9"
            "$venv/bin/python" -W ignore -c "import dpmm; print('dpmm ready:', '$venv')" ;;
        *) echo "setup_table_peers.sh: unknown peer $name (smartnoise or dpmm)" >&2; exit 2 ;;
    esac
done
