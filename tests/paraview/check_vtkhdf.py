"""Checks a quilt VTKHDF output the way ParaView sees it.

Run with ParaView's Python (Debian package python3-paraview):

    pvpython tests/paraview/check_vtkhdf.py FILE [--expect EXPECT.json]
        [--levels N] [--blocks N0,N1,...] [--density-range LO HI]
        [--tolerance TOL]

FILE is a `.hdf` output or a `.hdf.series` time series. The expectations
come from the command line or from a JSON sidecar (command-line values win):

    {
      "levels": 3,                       # number of AMR levels
      "blocks": [2, 2, 1],               # blocks (patches) per level
      "density_range": [lo, hi],         # min/max of `density` over all cells
      "array_ranges": {"name": [lo, hi]},  # optional: min/max of other cell arrays
      "array_bounds": {"name": [lo, hi]},  # optional: other cell arrays within [lo, hi]
      "tolerance": 1e-12,                # relative tolerance on ranges
      "time": 0.25,                      # series only: time step to check
      "times": [0.0, 0.25],              # series only: expected time steps
      "origin": [x, y, z],               # optional
      "spacing": [[dx, dy, dz], ...],    # optional, per level
      "amr_boxes": [[[i0,i1,j0,j1,k0,k1], ...], ...],  # optional, per level
      "covered": [n0, n1, ...],          # optional: cells ParaView blanks
      "density_linear": {"c0": c, "grad": [gx, gy, gz]}
                                         # optional: density = c0 + grad.x
                                         # at every cell centre
    }

Exit status: 0 when every check passes, 1 when one fails (all failures are
listed), 2 on bad usage.
"""

import argparse
import json
import math
import os
import sys


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("--expect", help="JSON file with expectations")
    p.add_argument("--levels", type=int)
    p.add_argument("--blocks", help="comma-separated blocks per level")
    p.add_argument("--density-range", type=float, nargs=2, metavar=("LO", "HI"))
    p.add_argument("--tolerance", type=float)
    return p.parse_args(argv)


def load_expectations(args):
    exp = {}
    if args.expect:
        with open(args.expect) as f:
            exp = json.load(f)
    if args.levels is not None:
        exp["levels"] = args.levels
    if args.blocks is not None:
        exp["blocks"] = [int(b) for b in args.blocks.split(",") if b]
    if args.density_range is not None:
        exp["density_range"] = list(args.density_range)
    if args.tolerance is not None:
        exp["tolerance"] = args.tolerance
    for key in ("levels", "blocks", "density_range"):
        if key not in exp:
            raise SystemExit("check_vtkhdf: no expectation for %r (use --expect or --%s)"
                             % (key, key.replace("_", "-")))
    return exp


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def main(argv):
    args = parse_args(argv)
    exp = load_expectations(args)
    tol = float(exp.get("tolerance", 1e-12))
    failures = []

    def check(ok, msg):
        if not ok:
            failures.append(msg)

    if not os.path.exists(args.file):
        print("check_vtkhdf: %s: no such file" % args.file, file=sys.stderr)
        return 1

    # Imported late so that usage errors do not pay for starting ParaView.
    from paraview import simple

    reader = simple.OpenDataFile(args.file)
    if reader is None:
        print("check_vtkhdf: ParaView found no reader for %s" % args.file, file=sys.stderr)
        return 1
    print("reader: %s" % reader.GetXMLName())
    if "MaximumLevelsToReadByDefaultForAMR" in reader.ListProperties():
        reader.MaximumLevelsToReadByDefaultForAMR = 0  # 0: every level

    times = list(getattr(reader, "TimestepValues", []) or [])
    if isinstance(times, float):
        times = [times]
    if "times" in exp:
        want = exp["times"]
        check(len(times) == len(want) and all(close(a, b, tol) for a, b in zip(times, want)),
              "time steps: ParaView has %s, expected %s" % (times, want))
    t = exp.get("time")
    if t is not None:
        reader.UpdatePipeline(t)
    else:
        reader.UpdatePipeline()

    amr = reader.GetClientSideObject().GetOutputDataObject(0)
    try:
        return check_amr(args, exp, tol, amr, failures, check)
    finally:
        # Release the reader's HDF5 handles before the interpreter shuts the
        # library down; otherwise ParaView prints HDF5 close errors at exit.
        del amr
        simple.Delete(reader)


def check_amr(args, exp, tol, amr, failures, check):
    from vtkmodules.vtkCommonDataModel import vtkDataSetAttributes
    from vtkmodules.util.numpy_support import vtk_to_numpy

    if amr is None or not amr.IsA("vtkOverlappingAMR"):
        print("check_vtkhdf: %s: output is %s, not vtkOverlappingAMR"
              % (args.file, None if amr is None else amr.GetClassName()), file=sys.stderr)
        return 1

    nlev = amr.GetNumberOfLevels()
    blocks = [amr.GetNumberOfDataSets(l) for l in range(nlev)]
    print("levels: %d, blocks per level: %s" % (nlev, blocks))
    check(nlev == exp["levels"], "levels: ParaView has %d, expected %d" % (nlev, exp["levels"]))
    check(blocks == exp["blocks"], "blocks per level: ParaView has %s, expected %s"
          % (blocks, exp["blocks"]))


    # VTK marks coarse cells under a finer level as REFINEDCELL (VTK >= 9.1)
    # or HIDDENCELL (older blanking); either counts as covered.
    hidden = vtkDataSetAttributes.HIDDENCELL | getattr(vtkDataSetAttributes, "REFINEDCELL", 0)
    lo, hi = math.inf, -math.inf
    bounded = list(exp.get("array_ranges", {})) + list(exp.get("array_bounds", {}))
    others = {name: [math.inf, -math.inf] for name in bounded}
    lin = exp.get("density_linear")
    worst_lin = 0.0
    covered = []
    for l in range(nlev):
        sp = [0.0, 0.0, 0.0]
        amr.GetSpacing(l, sp)
        if "spacing" in exp and l < len(exp["spacing"]):
            check(all(close(a, b, tol) for a, b in zip(sp, exp["spacing"][l])),
                  "level %d spacing: ParaView has %s, expected %s" % (l, sp, exp["spacing"][l]))
        ncovered = 0
        for b in range(amr.GetNumberOfDataSets(l)):
            box = amr.GetAMRBox(l, b)
            lo_c, hi_c = [0, 0, 0], [0, 0, 0]
            box.GetDimensions(lo_c, hi_c)
            row = [lo_c[0], hi_c[0], lo_c[1], hi_c[1], lo_c[2], hi_c[2]]
            if "amr_boxes" in exp and l < len(exp["amr_boxes"]):
                want = exp["amr_boxes"][l][b] if b < len(exp["amr_boxes"][l]) else None
                check(row == want, "level %d block %d: AMR box %s, expected %s" % (l, b, row, want))
            grid = amr.GetDataSet(l, b)
            if grid is None:
                failures.append("level %d block %d: no data set" % (l, b))
                continue
            if "origin" in exp:
                # Where ParaView puts the block: origin + lo * spacing.
                want = [exp["origin"][d] + lo_c[d] * sp[d] for d in range(3)]
                got = list(grid.GetOrigin())
                check(all(close(a, w, tol) for a, w in zip(got, want)),
                      "level %d block %d: block origin %s, expected %s" % (l, b, got, want))
            arr = grid.GetCellData().GetArray("density")
            if arr is None:
                failures.append("level %d block %d: no cell array `density`" % (l, b))
                continue
            rho = vtk_to_numpy(arr)
            check(rho.shape[0] == grid.GetNumberOfCells(),
                  "level %d block %d: %d density values for %d cells"
                  % (l, b, rho.shape[0], grid.GetNumberOfCells()))
            lo, hi = min(lo, float(rho.min())), max(hi, float(rho.max()))
            for name, r in others.items():
                other = grid.GetCellData().GetArray(name)
                if other is None:
                    failures.append("level %d block %d: no cell array `%s`" % (l, b, name))
                    continue
                values = vtk_to_numpy(other)
                r[0], r[1] = min(r[0], float(values.min())), max(r[1], float(values.max()))
            ghosts = grid.GetCellData().GetArray("vtkGhostType")
            if ghosts is not None:
                ncovered += int(((vtk_to_numpy(ghosts) & hidden) != 0).sum())
            if lin is not None:
                nx, ny, nz = [d - 1 for d in grid.GetDimensions()]
                ox, oy, oz = grid.GetOrigin()
                dx, dy, dz = grid.GetSpacing()
                c0, g = lin["c0"], lin["grad"]
                n = 0
                for k in range(nz):
                    z = oz + (k + 0.5) * dz
                    for j in range(ny):
                        y = oy + (j + 0.5) * dy
                        for i in range(nx):
                            x = ox + (i + 0.5) * dx
                            want = c0 + g[0] * x + g[1] * y + g[2] * z
                            err = abs(float(rho[n]) - want) / max(1.0, abs(want))
                            worst_lin = max(worst_lin, err)
                            n += 1
        covered.append(ncovered)

    print("density range: [%r, %r]" % (lo, hi))
    want = exp["density_range"]
    check(close(lo, want[0], tol) and close(hi, want[1], tol),
          "density range: ParaView has [%r, %r], expected [%r, %r]" % (lo, hi, want[0], want[1]))
    for name, (a_lo, a_hi) in others.items():
        print("%s range: [%r, %r]" % (name, a_lo, a_hi))
        if name in exp.get("array_ranges", {}):
            w_lo, w_hi = exp["array_ranges"][name]
            check(close(a_lo, w_lo, tol) and close(a_hi, w_hi, tol),
                  "%s range: ParaView has [%r, %r], expected [%r, %r]"
                  % (name, a_lo, a_hi, w_lo, w_hi))
        if name in exp.get("array_bounds", {}):
            w_lo, w_hi = exp["array_bounds"][name]
            check(w_lo <= a_lo and a_hi <= w_hi and a_lo <= a_hi,
                  "%s range: ParaView has [%r, %r], outside the bounds [%r, %r]"
                  % (name, a_lo, a_hi, w_lo, w_hi))
    if lin is not None:
        print("density vs analytic at cell centres: max relative error %.3g" % worst_lin)
        check(worst_lin <= tol, "density differs from c0 + grad.x at cell centres by %.3g "
              "(relative; tolerance %.3g): cell layout or geometry is wrong" % (worst_lin, tol))
    if "covered" in exp:
        print("blanked (covered) cells per level: %s" % covered)
        check(covered == exp["covered"], "blanked cells per level: ParaView has %s, expected %s"
              % (covered, exp["covered"]))

    if failures:
        for f in failures:
            print("FAIL: %s: %s" % (args.file, f), file=sys.stderr)
        return 1
    print("OK: %s" % args.file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
