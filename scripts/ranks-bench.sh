#!/usr/bin/env bash
# Runs over MPI ranks on a GPU node, with the `ranks` example built here:
#
#   cargo build --release --features mpi --example ranks
#   mkdir -p .device-bin && cp target/release/examples/ranks .device-bin/ && strip .device-bin/ranks
#   (libhdf5 and its dependencies in .device-bin/lib, as scripts/gpu-check.sh build leaves them)
#
# then, on the GPU node (through the device tool, carrying .device-bin):
#
#   bash scripts/ranks-bench.sh cpu        # CPU backend: 1x16, 4x4 boundary-first, 4x4 after the loop
#   bash scripts/ranks-bench.sh gpus N     # CUDA host-staged, one rank per GPU: 1, 2 (if N >= 2) and N GPUs, f64 and f32
#   bash scripts/ranks-bench.sh one N      # only the f64 run on N GPUs (QUILT_RANKS_BIN=another binary: a baseline)
#
# QUILT_RANKS_BIN names the binary (default .device-bin/ranks);
# QUILT_RUN_SUFFIX is appended to the log names of `one`;
# QUILT_MPI_BIND the placement options of mpirun (default "--bind-to none";
# e.g. "--map-by numa --bind-to numa" keeps each rank and its memory on one
# NUMA domain).
#
# Every run prints its cell updates/s, rank 0's exchange seconds by kind,
# the state digest (equal digests: bitwise equal runs), the load-balance
# efficiency of each regrid, each rank's batch loop at steps 8 and 16, each
# rank's phases and exchange volumes (pack / wait / unpack) and each
# regrid's parts. Every run adds a row to $OUT/runs.csv; `gpus` also
# writes $OUT/scaling.csv, the speed-ups over one GPU that `cargo xtask
# plot` draws (docs/figures/ranks_scaling.csv has the same columns).
# Logs go to $OUT (or ./ranks-bench-out).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/ranks-bench-out}"
mkdir -p "$OUT"
# Multicast (NVLS) stays off on shared multi-GPU hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH="/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.device-bin/lib"
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
export RUST_LOG=quilt_integrator::integrator=debug
B="${QUILT_RANKS_BIN:-$PWD/.device-bin/ranks}"
L=examples/decks/sphere_large.toml
L32=examples/decks/sphere_large_f32.toml
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cores: $(nproc)"; date -u
NODE="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed -E 's/^ *([0-9]+) (NVIDIA )?/\1x /' | tr '\n' ' ' | sed 's/ *$//') $(nproc) cores"

# run NAME RANKS THREADS DECK [ARGS...]; with GPU=1 each rank sees only
# the GPU of its local rank.
run() {
    local name=$1 np=$2 th=$3 deck=$4
    shift 4
    local s0=$SECONDS
    local wrap=()
    if [[ "${GPU:-0}" == 1 ]]; then
        wrap=(bash -c 'export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK; exec "$@"' _)
    fi
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe ${QUILT_MPI_BIND:---bind-to none} -np "$np" \
        -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS \
        -x LD_LIBRARY_PATH -x RUST_LOG -x OMPI_MCA_btl_vader_single_copy_mechanism \
        "${wrap[@]}" "$B" --config "$deck" --residency host --threads "$th" "$@" \
        >"$OUT/$name.out" 2>"$OUT/$name.err"
    echo "== $name: exit $?, $((SECONDS - s0)) s"
    grep -E "^ranks:" "$OUT/$name.out" | grep -v totals
    grep -E "^rank [0-9]+:" "$OUT/$name.out" | sort -s -k2,2n
    echo "regrids (layout, old pieces, transfer, all):"
    grep -oE "step [0-9]+ over [0-9]+ ranks:.*layout [0-9.]+ s, old pieces [0-9.]+ s, transfer [0-9.]+ s, all [0-9.]+ s" "$OUT/$name.err" |
        sed -E 's/over [0-9]+ ranks:.*layout/layout/' | tr '\n' ';'
    echo
    grep -oE "regrid layout after step.*" "$OUT/$name.err" | head -n 8
    grep -oE "efficiency [0-9.]+ kept, [0-9.]+ fresh, (fresh adopted|kept)" "$OUT/$name.err" | sort -u | tr '\n' ';'
    echo
    for s in 8 16; do
        echo "step $s batch loops: $(grep -E "step $s: t =" "$OUT/$name.err" | grep -oE "batch loop [0-9.]+ s" | tr '\n' ' ')"
    done
    local rate digest
    rate=$(grep -oE "[0-9.e+]+ cell updates/s" "$OUT/$name.out" | head -n1 | cut -d' ' -f1)
    digest=$(grep -oE "state digest [0-9a-f]+" "$OUT/$name.out" | cut -d' ' -f3)
    [[ -f "$OUT/runs.csv" ]] || echo "run,ranks,cell_updates_per_s,digest,node,date_utc" >"$OUT/runs.csv"
    echo "$name,$np,${rate:-nan},${digest:-none},$NODE,$(date -u +'%Y-%m-%d %H:%M')" >>"$OUT/runs.csv"
}

# scaling RUN1:RUNK...: rows `series,gpus,speedup` of $OUT/scaling.csv
# (the table `cargo xtask plot` draws) for one series, from the runs'
# rates in $OUT/runs.csv, over the first run's.
scaling() {
    local series=$1
    shift
    [[ -f "$OUT/scaling.csv" ]] || echo "series,gpus,speedup,cell_updates_per_s,node,date_utc" >"$OUT/scaling.csv"
    awk -F, -v series="$series" -v runs="$*" '
        NR > 1 { rate[$1] = $3; ranks[$1] = $2; node[$1] = $5; when[$1] = $6 }
        END {
            n = split(runs, r, " ")
            base = rate[r[1]]
            for (i = 1; i <= n; i++) if (r[i] in rate && base > 0)
                printf "%s,%d,%.3f,%s,%s,%s\n", series, ranks[r[i]], rate[r[i]] / base, rate[r[i]], node[r[i]], when[r[i]]
        }' "$OUT/runs.csv" >>"$OUT/scaling.csv"
}

case "${1:-cpu}" in
cpu)
    run cpu_1x16 1 16 "$L" --backend cpu
    run cpu_4x4 4 4 "$L" --backend cpu
    run cpu_4x4_after_loop 4 4 "$L" --backend cpu --no-overlap
    ;;
gpus)
    n="${2:-4}"
    th=$(($(nproc) / n))
    th=$((th > 16 ? 16 : th))
    export GPU=1
    run f64_1gpu 1 "$th" "$L" --backend cuda
    if ((n > 2)); then run f64_2gpu 2 "$th" "$L" --backend cuda; fi
    run "f64_${n}gpu" "$n" "$th" "$L" --backend cuda
    run "f64_${n}gpu_after_loop" "$n" "$th" "$L" --backend cuda --no-overlap
    run f32_1gpu 1 "$th" "$L32" --backend cuda
    run "f32_${n}gpu" "$n" "$th" "$L32" --backend cuda
    two=""
    if ((n > 2)); then two=f64_2gpu; fi
    scaling "f64 boundary-first" f64_1gpu $two "f64_${n}gpu"
    scaling "f64 after the loop" f64_1gpu "f64_${n}gpu_after_loop"
    scaling "f32 boundary-first" f32_1gpu "f32_${n}gpu"
    echo "speed-ups ($OUT/scaling.csv, for cargo xtask plot):"
    cat "$OUT/scaling.csv"
    ;;
one)
    n="${2:-4}"
    th=$(($(nproc) / n))
    th=$((th > 16 ? 16 : th))
    export GPU=1
    run "f64_${n}gpu_$(basename "$B")${QUILT_RUN_SUFFIX:-}" "$n" "$th" "$L" --backend cuda
    ;;
*)
    echo "usage: ranks-bench.sh cpu | gpus N | one N" >&2
    exit 2
    ;;
esac
date -u
