#!/usr/bin/env bash
# The end-to-end harness: one deck run by euler_sphere on every backend and
# batching in one script on one machine, with the phase table of each and
# the ratios between them.
#
#   scripts/sphere-bench.sh [DECK.toml ...]
#
# Configurations (QUILT_BENCH_CONFIGS, space-separated, in this order):
#   cuda-adaptive   CUDA backend, packed bins, adaptive (knapsack) batching
#   cuda-static     CUDA backend, packed bins, static batching (n_fixed)
#   cuda-default    the paper's default scheme: every patch in its own bin,
#                   per-patch kernels, static batching of n_fixed patches
#   cpu             the CPU backend on all cores, adaptive batching
#   cuda-resident   CUDA backend, device residency: the hierarchy stays on
#                   the GPU between regrids (run.residency = "device")
#   cpu-resident    the CPU backend in device residency (flat items on the
#                   host; the reference of cuda-resident)
# Environment:
#   QUILT_BENCH_RUNS   runs of each configuration (median reported; default 1)
#   QUILT_BENCH_TIMEOUT  seconds one run may take before it is stopped
#                      (SIGTERM, then SIGKILL 10 s later) and reported as
#                      failed, so that one stalled configuration does not
#                      hold up the others (default 900)
#   QUILT_BIN          directory holding euler_sphere (default .device-bin,
#                      else target/release/examples)
#   OUT                where the JSON summaries, logs and table go (default
#                      ./sphere-bench-out)
#   QUILT_BENCH_TRACES hierarchy files (space-separated, e.g. the paper's
#                      traces examples/traces/rt*.json with the deck
#                      examples/decks/sphere_traces.toml): each is replayed
#                      (the `replay` example, from the deck's initial
#                      condition on the trace's hierarchy, no regrids) in
#                      every configuration instead of running the deck, and
#                      named by its file and what the deck's name adds to
#                      sphere_traces (rt1_step4_f32 with
#                      sphere_traces_f32.toml)
#   QUILT_BENCH_STEPS  steps of each replay (default 4)
#   QUILT_BENCH_WARMUP 0 skips the untimed one-step run before each CUDA
#                      configuration (which has NVRTC compile its kernels
#                      into the disk cache; default 1)
# Decks default to examples/decks/sphere_large.toml. Each configuration is
# the deck with a [batching] table appended, so decks given here must not
# have one of their own.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/sphere-bench-out}"
mkdir -p "$out"
bin="${QUILT_BIN:-}"
if [[ -z "$bin" ]]; then
    if [[ -x "$root/.device-bin/euler_sphere" ]]; then
        bin="$root/.device-bin"
    else
        bin="$root/target/release/examples"
    fi
fi
runs="${QUILT_BENCH_RUNS:-1}"
run_limit="${QUILT_BENCH_TIMEOUT:-900}"
configs="${QUILT_BENCH_CONFIGS:-cuda-adaptive cuda-static cuda-default cpu}"
decks=("$@")
if [[ ${#decks[@]} -eq 0 ]]; then
    decks=("$root/examples/decks/sphere_large.toml")
fi

status=0
traces=(${QUILT_BENCH_TRACES:-})
for deck in "${decks[@]}"; do
    if [[ ${#traces[@]} -eq 0 ]]; then
        targets=("$(basename "$deck" .toml)=")
    else
        # Named by the trace, and by what the deck's name adds to
        # sphere_traces (sphere_traces_f32.toml: rt1_step4_f32).
        suffix="$(basename "$deck" .toml)"
        suffix="${suffix#sphere_traces}"
        targets=()
        for t in "${traces[@]}"; do targets+=("$(basename "$t" .json)$suffix=$t"); done
    fi
    for target in "${targets[@]}"; do
    name="${target%%=*}"
    trace="${target#*=}"
    if grep -q '^\[batching\]' "$deck"; then
        echo "sphere-bench: $deck has a [batching] table; the harness sets its own" >&2
        exit 2
    fi
    for cfg in $configs; do
        backend=cuda
        residency=host
        case "$cfg" in
        cuda-adaptive) extra='mode = "adaptive"' ;;
        cuda-static) extra='mode = "static"' ;;
        cuda-default) extra=$'mode = "static"\nlayout = "per_patch"\nmax_bins = 0' ;;
        cpu)
            backend=cpu
            extra='mode = "adaptive"'
            ;;
        cuda-resident)
            residency=device
            extra='mode = "adaptive"'
            ;;
        cpu-resident)
            backend=cpu
            residency=device
            extra='mode = "adaptive"'
            ;;
        *)
            echo "sphere-bench: unknown configuration $cfg" >&2
            exit 2
            ;;
        esac
        cfg_deck="$out/$name.$cfg.toml"
        { cat "$deck"; printf '\n[batching]\n%s\n' "$extra"; } >"$cfg_deck"
        # One untimed step first: NVRTC compiles each kernel set once per
        # machine (then read from the disk cache), and a timed run should
        # not hold that second.
        if [[ "${QUILT_BENCH_WARMUP:-1}" != 0 && "$backend" == cuda ]]; then
            timeout -k 10 "$run_limit" "$bin/euler_sphere" --no-output --config "$cfg_deck" \
                --backend cuda --residency "$residency" --max-steps 1 >/dev/null 2>&1 || true
        fi
        for r in $(seq 1 "$runs"); do
            tag="$name.$cfg.$r"
            echo "== $tag"
            t0=$SECONDS
            if [[ -n "$trace" ]]; then
                run=("$bin/replay" --trace "$trace" --steps "${QUILT_BENCH_STEPS:-4}")
            else
                run=("$bin/euler_sphere" --no-output)
            fi
            if timeout -k 10 "$run_limit" "${run[@]}" --config "$cfg_deck" \
                --backend "$backend" --residency "$residency" \
                --summary-json "$out/$tag.json" >"$out/$tag.log" 2>&1; then
                echo "   $((SECONDS - t0)) s"
            else
                echo "   FAILED after $((SECONDS - t0)) s: see $tag.log"
                tail -n 20 "$out/$tag.log"
                status=1
            fi
        done
    done
    python3 - "$out" "$name" "$configs" <<'EOF' | tee "$out/$name.table.txt"
import glob, json, os, statistics, sys

out, name, configs = sys.argv[1], sys.argv[2], sys.argv[3].split()
runs = {}
for cfg in configs:
    files = sorted(glob.glob(os.path.join(out, f"{name}.{cfg}.*.json")))
    rs = [json.load(open(f)) for f in files]
    if rs:
        runs[cfg] = rs

def med(cfg, key):
    vals = [r[key] for r in runs[cfg] if r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")

if not runs:
    sys.exit("no summaries")
first = next(iter(runs.values()))[0]
print(f"\n{name}: {first['precision']} {first['scheme']}, {first['steps']} steps, "
      f"{first['final_cells']} cells in {first['patches']} patches on {first['levels']} levels at the end")
for cfg, rs in runs.items():
    print(f"  {cfg}: {rs[0]['device']}; {len(rs)} run(s)")
cols = list(runs)
rows = [
    ("setup (initial hierarchy) s", "setup"),
    ("prepare s", "prepare"),
    ("solve s", "solve"),
    ("close s", "close"),
    ("reflux + restrict s", "reflux_restrict"),
    ("regrid s", "regrid"),
    ("CFL scan and other s", "other"),
    ("idle (solver waiting) s", "idle"),
    ("batch loop s", "batch_loop"),
    ("prepare tasks core-s", "prepare_tasks"),
    ("close tasks core-s", "close_tasks"),
    ("steps wall s", "steps_wall"),
    ("cell updates/s", "cell_updates_per_s"),
    ("batches", "batches"),
    ("peak memory MB", "peak_mb"),
    ("batch memory MB", "batch_memory_mb"),
    ("batch allocations", "batch_allocations"),
    ("solve estimate error", "solve_estimate_error"),
    ("prepare estimate error", "prepare_estimate_error"),
    ("shock radius", "shock_radius"),
]
w = 16
print()
print(f"{'median of runs':<30}" + "".join(f"{c:>{w}}" for c in cols))
for label, key in rows:
    cells = []
    for c in cols:
        v = med(c, key)
        if key == "cell_updates_per_s":
            cells.append(f"{v:>{w}.3e}")
        elif key in ("batches", "batch_allocations"):
            cells.append(f"{v:>{w}.0f}")
        elif key.endswith("estimate_error"):
            cells.append(f"{100 * v:>{w - 1}.1f}%")
        elif key == "shock_radius":
            cells.append(f"{v:>{w}.4f}")
        else:
            cells.append(f"{v:>{w}.3f}")
    print(f"{label:<30}" + "".join(cells))
idle = [100 * med(c, "idle") / max(med(c, "batch_loop"), 1e-12) for c in cols]
print(f"{'solver idle % of batch loop':<30}" + "".join(f"{v:>{w}.1f}" for v in idle))
mem = [med(c, "peak_mb") / max(2 * med(c, "state_mb_per_level"), 1e-12) for c in cols]
print(f"{'peak / both time levels':<30}" + "".join(f"{v:>{w}.2f}" for v in mem))

def dev(c, key):
    vals = [r["device_solves"][key] for r in runs[c]
            if r.get("device_solves") and key in r["device_solves"]]
    return statistics.median(vals) if vals else float("nan")

if any(r.get("device_solves") for c in cols for r in runs[c]):
    print()
    for label, key in [
        ("device: solve calls s", "host_s"),
        ("device: new layout states s", "layout_state_s"),
        ("device: queueing on the host s", "issue_s"),
        ("device: waiting for the GPU s", "wait_s"),
        ("device: GPU before verdict s", "gpu_s"),
        ("device: uploads s (summed)", "upload_s"),
        ("device: kernels s (summed)", "kernel_s"),
        ("device: downloads s", "download_s"),
        ("device: bus GB/s", "bus_gb_per_s"),
        ("device: uploads GB/s", "upload_gb_per_s"),
    ]:
        print(f"{label:<30}" + "".join(f"{dev(c, key):>{w}.3f}" for c in cols))
print()

def ratio(a, b, label):
    if a in runs and b in runs:
        r = med(a, "cell_updates_per_s") / med(b, "cell_updates_per_s")
        print(f"{label:<44} {r:6.2f}x")

ratio("cuda-adaptive", "cpu", "CUDA adaptive / CPU (cell updates/s)")
ratio("cuda-static", "cpu", "CUDA static / CPU")
ratio("cuda-adaptive", "cuda-static", "adaptive / static (CUDA)")
ratio("cuda-adaptive", "cuda-default", "CUDA adaptive / paper's default scheme")
ratio("cuda-resident", "cpu", "CUDA resident / CPU")
ratio("cuda-resident", "cuda-adaptive", "CUDA resident / CUDA host-staged")
radii = {c: med(c, "shock_radius") for c in cols}
if len({r for r in radii.values() if r == r}) > 1:
    print(f"shock radii differ: {radii}")
# The same deck gives bitwise the same state on every backend and batching
# (the default scheme's per-patch kernels too): one digest for all runs.
digests = {c: sorted({r["digest"] for r in runs[c] if "digest" in r}) for c in cols}
seen = {d for ds in digests.values() for d in ds}
if len(seen) == 1:
    print(f"state digest {seen.pop()} in every run")
elif seen:
    print(f"STATE DIGESTS DIFFER: {digests}")
EOF
    done
done
exit $status
