#!/usr/bin/env bash
# One short session on a GPU machine (the GPU oracle against mbi 2.0), from the repository root:
#
#   benchmarks/gpu_session.sh bundle     # here: what the GPU machine lacks, into .gpu/ (ignored; carry it)
#   benchmarks/gpu_session.sh --quick    # here, on the CPU: the same steps as a smoke test (minutes; with
#                                        # --rerun: that mode's steps)
#   benchmarks/gpu_session.sh            # there: every step below, in about 7 minutes
#   benchmarks/gpu_session.sh --missing  # there: only the runs benchmarks/results/gpu_vs_mbi.json lacks, failed
#                                        # or timed out (a grid split over sessions)
#   benchmarks/gpu_session.sh --rerun    # there: after a change to the oracle, ours again where the targets
#                                        # read it (the large cases on the GPU, first call profiled, AIM on
#                                        # the GPU and the CPU), the rest as time allows
# --missing and --rerun start from the recorded runs: their gpu_vs_mbi.json replaces the recorded one.
#
# The bundle: the mbi 2.0.0 wheel (its needs, JAX included, are on the machine), the shared adult
# and titanic tables, and the author's mechanism scripts (a clone of private-pgm: $PRIVATE_PGM_GIT,
# default /work/.mirror/ryan112358+private-pgm/repo).
#
# Steps, in two streams so that they fit: the GPU stream (cores 0-7) prints the versions of CUDA,
# torch, triton, JAX and numba and the fused kernels' cold compile, runs tests/test_torch_oracle.py on
# CUDA, profiles a first call (adult-k9-large, and chain-1000, whose stacks show where it hangs), then
# benchmarks/gpu_vs_mbi.py for ours on the GPU (float64 and float32, with the profile of its costliest
# kernels) and mbi on the same GPU, largest cases first, then AIM; the CPU stream (cores 8-15, numba
# on 8 threads) runs ours on the CPU over the same cases.  A step that would run past SESSION_S
# (default 420) seconds is skipped and says so.  Everything lands in $OUT (default /tmp/gpu_session): session.log,
# versions.txt, pytest.log, gpu_steps.log, cpu_steps.log and gpu_vs_mbi.json (copy it to
# benchmarks/results/ afterwards).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bundle=$repo/.gpu

if [ "${1:-}" = bundle ]; then
    set -e
    rm -rf "$bundle" && mkdir -p "$bundle/data" "$bundle/reference" "$bundle/wheels"
    grep -qx "/.gpu/" .git/info/exclude || echo "/.gpu/" >> .git/info/exclude
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$bundle/wheels" mbi==2.0.0
    cp ../shared/data/{adult,titanic}.csv ../shared/data/{adult,titanic}-domain.json "$bundle/data/"
    git --git-dir="${PRIVATE_PGM_GIT:-/work/.mirror/ryan112358+private-pgm/repo}" archive HEAD mechanisms \
        | tar -x -C "$bundle/reference" --strip-components=1
    du -sh "$bundle"
    exit 0
fi

mode=()  # the option gpu_vs_mbi.py runs with: --quick, --missing or none
[[ " $* " == *" --quick "* ]] && mode=(--quick)
out=${OUT:-/tmp/gpu_session}
mkdir -p "$out"
[ "${1:-}" = --missing ] && mode=(--missing)  # both streams skip the runs they hold
if [ "${1:-}" = --missing ] || [ "${1:-}" = --rerun ]; then  # both streams start from the recorded runs
    cp benchmarks/results/gpu_vs_mbi.json "$out/gpu_vs_mbi.json"
    cp benchmarks/results/gpu_vs_mbi.json "$out/gpu_vs_mbi_cpu.json"
fi
python=${PYTHON:-python3}
start=$(date +%s)
budget=${SESSION_S:-420}
log() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$out/session.log"; }
# run NAME SECONDS COMMAND...: COMMAND when it can end before the session's budget, cut at SECONDS, its
# output into $out/$steps.log (one log a stream: at most 8 files come back from the machine)
run() {
    local name=$1 limit=$2
    shift 2
    local left=$(( budget - ($(date +%s) - start) ))
    if [ "$left" -lt 20 ]; then
        log "skipped $name: ${left} s left"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    log "start $name (at most ${limit} s)"
    echo "=== $name" >> "$out/$steps.log"
    timeout "$limit" "$@" >> "$out/$steps.log" 2>&1
    log "end $name: exit $?"
}
pin() {  # pin CORES: this shell and what it starts on those cores, where taskset exists and the machine has 16
    if command -v taskset > /dev/null && [ "$(nproc)" -ge 16 ]; then taskset -cp "$1" "$BASHPID" > /dev/null; fi
}

if [ -d "$bundle/wheels" ] && [ "${mode[*]}" != --quick ]; then
    $python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$bundle"/wheels/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
data=$bundle/data
reference=$bundle/reference
[ -d "$data" ] || data=$repo/../shared/data
[ -d "$reference" ] || reference=$repo/../venvs/private-pgm-mechanisms
json=$out/gpu_vs_mbi.json
bench() {  # bench NAME SECONDS CASE-TIMEOUT ARGS...: benchmarks/gpu_vs_mbi.py into $json
    local name=$1 limit=$2 each=$3
    shift 3
    run "$name" "$limit" $python benchmarks/gpu_vs_mbi.py "${mode[@]}" --out "$json" --data "$data" \
        --reference "$reference" --mbi-python "${MBI_PYTHON:-$(command -v $python)}" --case-timeout "$each" "$@"
}

{
    nvidia-smi || echo "no nvidia-smi"
    nvcc --version 2>/dev/null | tail -2
    $python - <<'EOF'
import importlib.metadata as md, os, platform
print("python", platform.python_version(), "cpus", os.cpu_count())
for name in ("torch", "triton", "jax", "jaxlib", "numba", "numpy", "scipy", "mbi"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "absent")
try:
    import torch
    print("torch cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
    import jax
    print("jax devices", jax.devices())
except Exception as exc:  # a report, not a check
    print("device probe failed:", type(exc).__name__, exc)
EOF
    TRITON_CACHE_DIR=$(mktemp -d) $python - <<'EOF'
import importlib.util, time
torch = importlib.util.find_spec("torch") and __import__("torch")
if torch and torch.cuda.is_available():  # the fused kernels compiled from an empty cache: what a first run pays
    from ektelo_pgm import Domain
    from ektelo_pgm.pgm.inference import MarginalOracle
    from ektelo_pgm.pgm.torch_oracle import FUSED_FAILURES, TorchOracle
    base = MarginalOracle(Domain(["a", "b", "c"], [4, 5, 6]), [("a", "b"), ("b", "c")])
    torch.zeros(1, device="cuda")
    for dtype in ("float64", "float32"):
        start = time.perf_counter()
        oracle = TorchOracle(base, "cuda", dtype)
        print(f"fused {dtype}: {oracle.fused}, cold compile {time.perf_counter() - start:.2f} s", FUSED_FAILURES)
EOF
} > "$out/versions.txt" 2>&1
log "versions: $(grep -E '^(torch|triton|jax|numba|fused) ' "$out/versions.txt" | tr '\n' ' ')"

big=(adult-k9-large adult-3m adult-1m)
rest=(adult-300k adult-k9 chain-1000 adult-k3 chain-100 appgm-100x1000 appgm-30x100)
cpu_stream() {
    export NUMBA_NUM_THREADS=8 OMP_NUM_THREADS=8 steps=cpu_steps
    bench cpu-oracle 300 90 --cases "${big[@]}" "${rest[@]}" --sides ours-cpu
    bench cpu-aim 400 150 --cases aim-adult-eps3 aim-bn40-eps1 --sides ours-cpu
}
gpu_checks() {  # how the GPU stream starts, whatever it measures: the CUDA tests, then a first call profiled
    export NUMBA_NUM_THREADS=8 OMP_NUM_THREADS=8 XLA_PYTHON_CLIENT_PREALLOCATE=false steps=pytest
    run pytest 90 $python -m pytest -q -rs -p no:cacheprovider -n 4 tests/test_torch_oracle.py
    steps=gpu_steps
    grep -E "passed|failed|error" "$out/pytest.log" | tail -1 | while read -r line; do log "pytest: $line"; done
    bench gpu-first-call 40 30 --cases adult-k9-large --sides ours-gpu --first-call
}
gpu_stream() {
    gpu_checks
    bench gpu-big 150 45 --cases "${big[@]}" --sides ours-gpu ours-gpu-f32 ours-gpu-unfused mbi mbi-f32 --profile
    bench gpu-aim-ours 120 100 --cases aim-adult-eps3 aim-bn40-eps1 --sides ours-gpu
    bench gpu-rest 100 30 --cases "${rest[@]}" --sides ours-gpu mbi
    bench gpu-aim-mbi 130 60 --cases aim-adult-eps3 aim-bn40-eps1 --sides mbi
}
if [[ " $* " == *" --rerun "* ]]; then  # the targets' runs first
    cpu_stream() {
        export NUMBA_NUM_THREADS=8 OMP_NUM_THREADS=8 steps=cpu_steps
        bench cpu-aim 420 400 --cases aim-adult-eps3 aim-bn40-eps1 --sides ours-cpu
    }
    gpu_stream() {
        gpu_checks
        bench gpu-big 110 40 --cases "${big[@]}" --sides ours-gpu ours-gpu-f32 --profile
        bench gpu-aim-ours 200 190 --cases aim-adult-eps3 aim-bn40-eps1 --sides ours-gpu
        bench gpu-rest 60 25 --cases adult-300k adult-k9 adult-k3 --sides ours-gpu
        bench gpu-deep 40 30 --cases chain-100 chain-1000 --sides ours-gpu --curve-iters  # no mbi runs to meet
    }
fi
# the two streams write one JSON: the CPU stream's to its own file, merged at the end
(json=$out/gpu_vs_mbi_cpu.json && pin 8-15 && cpu_stream) &
cpu=$!
(pin 0-7 && gpu_stream)
wait $cpu
$python - "$json" "$out/gpu_vs_mbi_cpu.json" <<'EOF'
import json, sys
from pathlib import Path
gpu, cpu = (Path(p) for p in sys.argv[1:])
runs = {}
for path in (gpu, cpu):
    if path.exists():  # the CPU stream's file holds what it ran, and the GPU stream's runs only as recorded
        for run in json.loads(path.read_text())["runs"]:
            if path == gpu or run["side"] == "ours-cpu":
                runs[(run["case"], run["side"])] = run
meta = json.loads(gpu.read_text()) if gpu.exists() else {}
meta["runs"] = list(runs.values())
gpu.write_text(json.dumps(meta, indent=1))
EOF
rm -f "$out/gpu_vs_mbi_cpu.json"
$python benchmarks/gpu_vs_mbi.py --table --out "$json" | tee -a "$out/session.log"
log "done"
