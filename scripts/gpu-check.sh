#!/usr/bin/env bash
# GPU checks of crates/quilt-cuda, in two halves:
#
#   scripts/gpu-check.sh build      (here, on the x86-64 development machine)
#       builds the release gpu_bench, euler_sphere and replay examples, the
#       quilt-cuda test binaries and quilt-integrator's CUDA test (located
#       through cargo's --message-format=json) and copies them into
#       .device-bin/ (git-ignored), stripped and gzipped (the device tool
#       carries 64 MiB at most; `device` and `paper` unpack them), with the
#       shared libraries they need beyond the C runtime (libhdf5 and its
#       dependencies: the GPU machine has no HDF5) in .device-bin/lib.
#
#   scripts/gpu-check.sh device     (on the GPU machine, from the repository root)
#       runs, with NVRTC found on that machine: the no-GPU tests, the GPU tests
#       (--ignored: every scheme, precision and variant against the CPU,
#       Riemann problems, x/y/z symmetry, packed vs default, errors, the FMA
#       path), compute-sanitizer memcheck and racecheck on the kernels of the
#       sanitizer_smoke test, the integrator on CPU and CUDA backends (bitwise),
#       the Euler sphere on the GPU and on the CPU, and the gpu_bench example;
#       prints a short table
#       and leaves full logs in $OUT (or ./gpu-check-out).
#
# The one device command (through the device tool, carrying .device-bin):
#   bash scripts/gpu-check.sh device
# and the founding paper's suite (see paper() below):
#   bash scripts/gpu-check.sh paper
# Environment of the device half:
#   QUILT_BENCH_ARGS   arguments of gpu_bench (default: the paper's full set)
#   QUILT_CHECK_SKIP   space-separated steps to skip: tests sanitizer sphere bench
#   QUILT_SPHERE_ARGS  extra arguments of both euler_sphere runs
#   QUILT_TEST_FILTER  extra arguments for the GPU test binary (e.g. a test name)
#   QUILT_KERNELS_DIR  compile the kernels from this directory instead of the
#                      sources built into the binaries (kernel changes tried
#                      without a rebuild; a relative path is taken from the
#                      repository root)
#   QUILT_NCU=1        also profile the RTVD f32 rows and march kernels with
#                      Nsight Compute (clock control off: clocks as found)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="$root/.device-bin"
if [[ -n "${QUILT_KERNELS_DIR:-}" ]]; then
    export QUILT_KERNELS_DIR="$(cd "$QUILT_KERNELS_DIR" && pwd)"
fi
mode="${1:-build}"

# Copies the test executables of package $1 from cargo's JSON messages on
# stdin into $bin, named with the prefix $2 and the test target's name.
collect() {
    python3 -c '
import json, sys, shutil, os
dst, pkg, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    t = m["target"]
    if m["package_id"].find(pkg) < 0 or "test" not in t["kind"]:
        continue
    shutil.copy(m["executable"], os.path.join(dst, prefix + t["name"]))
    print("  ", prefix + t["name"], "<-", m["executable"])
    n += 1
if n == 0:
    sys.exit("no " + pkg + " test binaries found in cargo output")
' "$bin" "$1" "${2:-}"
}

# Restores the binaries that `build` compressed (kept compressed too, so
# that a later call can unpack them again) and makes them executable.
unpack() {
    local f
    for f in "$bin"/*.gz; do
        if [[ -f "$f" ]]; then gunzip -kf "$f"; fi
    done
    chmod +x "$bin"/* 2>/dev/null || true
}

build() {
    set -e
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
    mkdir -p "$bin"
    echo "building gpu_bench (release) ..."
    cargo build --release --example gpu_bench
    cp "$CARGO_TARGET_DIR/release/examples/gpu_bench" "$bin/gpu_bench"
    echo "building the quilt-cuda test binaries (release) ..."
    local json
    if ! json="$(cargo test -p quilt-cuda --release --no-run --message-format=json 2>"$bin/build.log")"; then
        cat "$bin/build.log" >&2
        exit 1
    fi
    rm -f "$bin/build.log"
    echo "$json" | collect quilt-cuda
    echo "building euler_sphere, replay and quilt-integrator's CUDA test (release) ..."
    cargo build --release --example euler_sphere --example replay
    cp "$CARGO_TARGET_DIR/release/examples/euler_sphere" "$bin/euler_sphere"
    cp "$CARGO_TARGET_DIR/release/examples/replay" "$bin/replay"
    if ! json="$(cargo test -p quilt-integrator --release --test cuda --no-run --message-format=json 2>"$bin/build.log")"; then
        cat "$bin/build.log" >&2
        exit 1
    fi
    rm -f "$bin/build.log"
    echo "$json" | collect quilt-integrator integrator-
    if command -v strip >/dev/null; then
        strip "$bin"/* 2>/dev/null || true
    fi
    # Shared libraries beyond the C runtime (libhdf5 and what it pulls in),
    # which the GPU machine lacks; found there through LD_LIBRARY_PATH.
    mkdir -p "$bin/lib"
    for f in "$bin"/*; do
        [[ -f "$f" ]] || continue
        ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
    done | sort -u | while read -r so; do
        case "$(basename "$so")" in
        libc.so* | libm.so* | libgcc_s.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | ld-linux*) ;;
        *) cp -L "$so" "$bin/lib/" ;;
        esac
    done
    # Compressed, so that the binaries travel within the device tool's
    # 64 MiB carry limit; `unpack` restores them on the GPU machine.
    for f in "$bin"/*; do
        if [[ -f "$f" && "$f" != *.gz ]]; then gzip -f "$f"; fi
    done
    du -sh "$bin"
    echo "now run on the GPU machine: bash scripts/gpu-check.sh device   (carry .device-bin)"
}

device() {
    local out="${OUT:-$root/gpu-check-out}"
    mkdir -p "$out"
    local skip=" ${QUILT_CHECK_SKIP:-} "
    local summary="$out/summary.txt"
    : >"$summary"
    note() { echo "$*" | tee -a "$summary"; }
    nvidia-smi -L 2>&1 | tee "$out/device.txt"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >>"$out/device.txt" 2>&1
    # NVRTC of the machine's CUDA 13 (toolkit or the PyPI wheel of its Python).
    local lib
    lib="$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib -name 'libnvrtc.so.13*' -not -name '*builtins*' 2>/dev/null | head -n 1)"
    if [[ -z "$lib" ]]; then
        note "FAIL  nvrtc: libnvrtc.so.13 not found"
        return 1
    fi
    export LD_LIBRARY_PATH="$(dirname "$lib"):$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    note "nvrtc: $lib"
    export QUILT_REQUIRE_NVRTC=1 QUILT_REQUIRE_GPU=1 RUST_BACKTRACE=1
    unpack
    local status=0
    step() {
        local name="$1"
        shift
        local t0=$SECONDS
        if "$@" >"$out/$name.log" 2>&1; then
            note "PASS  $name ($((SECONDS - t0)) s)"
        else
            note "FAIL  $name ($((SECONDS - t0)) s): see $name.log"
            tail -n 30 "$out/$name.log"
            status=1
        fi
    }
    if [[ "$skip" != *" tests "* ]]; then
        step backend "$bin/backend"
        step compile "$bin/compile"
        # shellcheck disable=SC2086
        step gpu-tests "$bin/gpu" --ignored --test-threads=4 ${QUILT_TEST_FILTER:-}
        grep -E "^fma on|GPU: L1|Sod on the GPU" "$out/gpu-tests.log" | tee -a "$summary"
        step integrator-cuda "$bin/integrator-cuda" --ignored --test-threads=1
    fi
    if [[ "$skip" != *" sphere "* ]]; then
        # The main job on the GPU, then on the CPU cores of the same machine.
        # shellcheck disable=SC2086
        step sphere-cuda "$bin/euler_sphere" --backend cuda --no-output ${QUILT_SPHERE_ARGS:-}
        # shellcheck disable=SC2086
        step sphere-cpu "$bin/euler_sphere" --backend cpu --no-output ${QUILT_SPHERE_ARGS:-}
        for b in cuda cpu; do
            echo "--- sphere on $b" | tee -a "$summary"
            sed -n '/^quilt euler_sphere/,$p' "$out/sphere-$b.log" | tee -a "$summary"
        done
    fi
    if [[ "$skip" != *" sanitizer "* ]]; then
        for tool in memcheck racecheck; do
            step "sanitizer-$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 \
                "$bin/gpu" --ignored --exact sanitizer_smoke --test-threads=1
            grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer-$tool.log" | tail -n 2 | tee -a "$summary"
        done
    fi
    if [[ "${QUILT_NCU:-0}" == 1 ]]; then
        step ncu ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            --section ComputeWorkloadAnalysis --section InstructionStats -k 'regex:(rtvd_(march|rows)|scan)_f32' -c 4 \
            "$bin/gpu_bench" --patches 420 --seeds 1 --steps 1 --schemes rtvd --precisions f32 \
            --configs +kopt --kernels-only
    fi
    if [[ "$skip" != *" bench "* ]]; then
        # shellcheck disable=SC2086
        step bench "$bin/gpu_bench" ${QUILT_BENCH_ARGS:-} --csv "$out/bench.csv"
        grep -E "^device|^bandwidth|^kernels compiled|mean speedup|^goal|advance\(\)|^[A-Z]+ f(32|64):|^patches|^ *[0-9]+ +[0-9.]+ +[0-9.]+ " \
            "$out/bench.log" | tee -a "$summary" || true
    fi
    echo
    echo "=== summary ($out) ==="
    cat "$summary"
    return $status
}

# The founding paper's suite on the GPU machine: what `cargo xtask paper
# --gpu DIR` reads, in $OUT/paper-runs/DATE-GPU/ and the archive
# $OUT/paper-runs.tgz (refreshed after each part, so a part cut short keeps
# the others). QUILT_PAPER_PARTS picks the parts, in this order (the default five
# take about 17 minutes on an H200 node, more than one device call allows):
#   large    scripts/sphere-bench.sh on sphere_large.toml, every configuration
#   f32      the same on sphere_large_f32.toml, the CUDA configurations
#   traces   the traces RT I-III replayed (4 steps) in the CUDA configurations,
#            f64 and f32
#   tvd      the TVD traces (examples/traces/tvd/) replayed with the TVD
#            scheme in the CUDA configurations (Table 8)
#   solver   gpu_bench's solver tables (kernels only) as gpu_bench.csv, on
#            the synthetic hierarchies and the traces (RTVD and TVD)
#   blocks   sphere_large_blocks.toml (uniform 16^3 patches, Figure 9) in
#            the configurations of `large` it is set against; not in the
#            default list (uniform patches need several times the memory
#            and time of the non-uniform deck)
# QUILT_BENCH_RUNS (default 3) runs of each configuration.
paper() {
    local out="${OUT:-$root/gpu-check-out}"
    local lib
    lib="$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib -name 'libnvrtc.so.13*' -not -name '*builtins*' 2>/dev/null | head -n 1)"
    export LD_LIBRARY_PATH="${lib:+$(dirname "$lib"):}$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    unpack
    local gpu
    gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -c 'A-Za-z0-9\n' '-' | sed 's/-*$//')"
    local dir="$out/paper-runs/$(date -u +%F)-${gpu:-gpu}"
    mkdir -p "$dir"
    export QUILT_BIN="$bin" QUILT_BENCH_RUNS="${QUILT_BENCH_RUNS:-3}"
    local part
    for part in ${QUILT_PAPER_PARTS:-large f32 traces tvd solver}; do
        echo "== paper: $part ($(date -u +%T) UTC)"
        case "$part" in
        large)
            OUT="$dir" QUILT_BENCH_CONFIGS="cuda-resident cuda-adaptive cuda-static cuda-default cpu" \
                bash "$root/scripts/sphere-bench.sh" "$root/examples/decks/sphere_large.toml"
            ;;
        f32)
            OUT="$dir" QUILT_BENCH_CONFIGS="cuda-resident cuda-adaptive cuda-static" \
                bash "$root/scripts/sphere-bench.sh" "$root/examples/decks/sphere_large_f32.toml"
            ;;
        traces)
            OUT="$dir" QUILT_BENCH_CONFIGS="cuda-adaptive cuda-static cuda-default" \
                QUILT_BENCH_TRACES="$(ls "$root"/examples/traces/rt*.json | tr '\n' ' ')" \
                bash "$root/scripts/sphere-bench.sh" "$root/examples/decks/sphere_traces.toml" \
                "$root/examples/decks/sphere_traces_f32.toml"
            ;;
        tvd)
            OUT="$dir" QUILT_BENCH_CONFIGS="cuda-adaptive cuda-static cuda-default" \
                QUILT_BENCH_TRACES="$(ls "$root"/examples/traces/tvd/rt*.json | tr '\n' ' ')" \
                bash "$root/scripts/sphere-bench.sh" "$root/examples/decks/sphere_traces_tvd.toml"
            ;;
        blocks)
            OUT="$dir" QUILT_BENCH_CONFIGS="cuda-resident cuda-adaptive" \
                bash "$root/scripts/sphere-bench.sh" "$root/examples/decks/sphere_large_blocks.toml"
            ;;
        solver)
            "$bin/gpu_bench" --seeds 3 --steps 3 --kernels-only --resident-steps 0 \
                --configs default,packed,+kopt --csv "$dir/gpu_bench.csv" \
                --traces "$(ls "$root"/examples/traces/rt*.json "$root"/examples/traces/tvd/rt*.json | paste -sd,)" \
                >"$dir/gpu_bench.log" 2>&1 ||
                tail -n 20 "$dir/gpu_bench.log"
            grep -E "mean speedup|^trace " "$dir/gpu_bench.log" || true
            ;;
        *)
            echo "paper: unknown part $part (large f32 traces tvd solver blocks)" >&2
            return 2
            ;;
        esac
        # The logs stay on the machine; the summaries come back.
        tar czf "$out/paper-runs.tgz" -C "$out" --exclude='*.log' paper-runs
    done
    echo "then here: cargo xtask paper --gpu <the folder in paper-runs.tgz> --gpu-label '...'"
}

case "$mode" in
build) build ;;
device) device ;;
paper) paper ;;
*)
    echo "usage: scripts/gpu-check.sh [build|device|paper]" >&2
    exit 2
    ;;
esac
