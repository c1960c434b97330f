#!/usr/bin/env python3
"""How far the cost model's per-batch estimates could get: the noise of
identical batches across runs, against the model's error.

Run `euler_sphere` two or more times on the same deck with static batching
(`[batching] mode = "static"`, so every run solves the same batches) and
trace logging of the batch loop:

    RUST_LOG="info,quilt_integrator::pipeline::overlap=trace" \\
        euler_sphere --config DECK --backend cuda --no-output > runN.log 2>&1

then `python3 scripts/estimate-noise.py run1.log run2.log [run3.log ...]`
(plain or .gz). It prints, for the solve and for the prepare (the slowest
prepare queue of a batch, what the model estimates), the per-batch error
of the estimates, the spread of identical batches between runs (the floor
no deterministic model can beat), and the measured / estimated ratio by
batch size and by position within the step.
"""

import gzip
import re
import statistics as st
import sys

PICK = re.compile(r"pick (\d+) at \d+ us: (\d+) bins, prepare ([0-9.e+-]+) s, solve ([0-9.e+-]+) s")
SOLVE = re.compile(r"batch (\d+): prepare \d+\.\.\d+ us, solve (\d+)\.\.(\d+) us")
QUEUE = re.compile(r"batch (\d+): slowest prepare queue ([0-9.e+-]+) s")


def load(path):
    """Steps of a run: per step, batch id -> bins, estimates and measurements."""
    opener = gzip.open if path.endswith(".gz") else open
    steps, cur = [], None
    with opener(path, "rt") as f:
        for line in f:
            m = PICK.search(line)
            if m:
                i = int(m[1])
                if i == 0:
                    cur = {}
                    steps.append(cur)
                cur[i] = {"id": i, "bins": int(m[2]), "prepare_est": float(m[3]), "solve_est": float(m[4])}
                continue
            m = SOLVE.search(line)
            if m and cur is not None and int(m[1]) in cur:
                cur[int(m[1])]["solve"] = (int(m[3]) - int(m[2])) * 1e-6
                continue
            m = QUEUE.search(line)
            if m and cur is not None and int(m[1]) in cur:
                cur[int(m[1])]["prepare"] = float(m[2])
    return steps


def complete(d):
    return "solve" in d and "prepare" in d and d["solve"] > 0 and d["prepare"] > 0


def main(paths):
    if len(paths) < 2:
        sys.exit(__doc__)
    runs = [load(p) for p in paths]
    for p, r in zip(paths, runs):
        b = [d for s in r for d in s.values() if complete(d)]
        if not b:
            sys.exit(f"{p}: no traced batches (RUST_LOG as in the usage above?)")
        print(f"{p}: {len(r)} steps, {len(b)} batches; estimate error: "
              f"solve {100 * st.mean(abs(d['solve_est'] - d['solve']) / d['solve'] for d in b):.1f} %, "
              f"prepare {100 * st.mean(abs(d['prepare_est'] - d['prepare']) / d['prepare'] for d in b):.1f} %")
    spread = {"solve": [], "prepare": []}
    model = {"solve": [], "prepare": []}
    for steps in zip(*runs):
        for i, first in steps[0].items():
            same = [s.get(i) for s in steps]
            if any(d is None or not complete(d) or d["bins"] != first["bins"] for d in same):
                continue
            for key in spread:
                v = [d[key] for d in same]
                mean = sum(v) / len(v)
                spread[key].append(st.mean(abs(x - mean) / mean for x in v))
                model[key].append(abs(first[key + "_est"] - mean) / mean)
    if not spread["solve"]:
        sys.exit("no batch appears in every run with the same bins: static batching?")
    print(f"{len(spread['solve'])} batches in every run")
    for key in spread:
        print(f"{key}: a run against the mean of the runs {100 * st.mean(spread[key]):.1f} % "
              f"(the noise floor); the estimate against that mean {100 * st.mean(model[key]):.1f} %")
    first = runs[0]

    def ratios(key, group):
        out = {}
        for k, s in enumerate(first):
            for d in s.values():
                if complete(d):
                    out.setdefault(group(k, s, d), []).append(d[key] / d[key + "_est"])
        for g in sorted(out):
            v = sorted(out[g])
            print(f"  {g}: {len(v)} batches, measured / estimated median {st.median(v):.2f} "
                  f"(p10 {v[len(v) // 10]:.2f}, p90 {v[9 * len(v) // 10]:.2f})")

    for key in ("solve", "prepare"):
        print(f"{key}, by bins per batch:")
        ratios(key, lambda k, s, d: min(d["bins"], 6))
        print(f"{key}, by tenth of the step (batch order):")
        ratios(key, lambda k, s, d: min(9, 10 * d["id"] // len(s)))


if __name__ == "__main__":
    main(sys.argv[1:])
