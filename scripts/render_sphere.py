"""Renders a slice of a quilt VTKHDF output (density, or any cell array
such as a passive scalar) with the outline of every patch the slice cuts,
coloured by level.

Run with ParaView's Python (Debian package python3-paraview); without a
display, under xvfb-run:

    xvfb-run -a pvpython scripts/render_sphere.py OUT/sphere.hdf.series \
        docs/figures/sphere_slice.png [--time T] [--z Z] [--size W H]
        [--field NAME]

The slice is the plane z = Z (default: the middle of the domain) at time
T (default: the series' last). Covered cells are blanked by the reader,
so each point of the plane shows its finest level.
"""

import argparse
import sys

from paraview import simple


LEVEL_COLOURS = [
    [0.55, 0.55, 0.55],
    [0.1, 0.1, 0.1],
    [0.85, 0.1, 0.1],
    [0.1, 0.35, 0.85],
    [0.1, 0.65, 0.2],
    [0.75, 0.45, 0.05],
]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("png")
    p.add_argument("--time", type=float)
    p.add_argument("--z", type=float)
    p.add_argument("--size", type=int, nargs=2, default=[1200, 1000], metavar=("W", "H"))
    p.add_argument("--field", default="density", help="cell array to colour by (default density)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    reader = simple.OpenDataFile(args.file)
    if reader is None:
        print("render_sphere: ParaView found no reader for %s" % args.file, file=sys.stderr)
        return 1
    if "MaximumLevelsToReadByDefaultForAMR" in reader.ListProperties():
        reader.MaximumLevelsToReadByDefaultForAMR = 0
    times = list(getattr(reader, "TimestepValues", []) or [])
    if isinstance(times, float):
        times = [times]
    t = args.time if args.time is not None else (times[-1] if times else None)
    if t is None:
        reader.UpdatePipeline()
    else:
        reader.UpdatePipeline(t)
    amr = reader.GetClientSideObject().GetOutputDataObject(0)
    bounds = [0.0] * 6
    amr.GetBounds(bounds)
    z = args.z if args.z is not None else 0.5 * (bounds[4] + bounds[5])

    view = simple.CreateView("RenderView")
    view.ViewSize = args.size
    view.OrientationAxesVisibility = 0
    view.Background = [1.0, 1.0, 1.0]
    if hasattr(view, "UseColorPaletteForBackground"):
        view.UseColorPaletteForBackground = 0
    if t is not None:
        view.ViewTime = t

    # One slice per level, so that each level's patch outlines get their
    # own colour; the field comes from the whole (blanked) hierarchy.
    whole = simple.Slice(Input=reader)
    whole.SliceType = "Plane"
    whole.SliceType.Origin = [0.5 * (bounds[0] + bounds[1]), 0.5 * (bounds[2] + bounds[3]), z]
    whole.SliceType.Normal = [0.0, 0.0, 1.0]
    shown = simple.Show(whole, view)
    simple.ColorBy(shown, ("CELLS", args.field))
    lut = simple.GetColorTransferFunction(args.field)
    lut.ApplyPreset("Viridis (matplotlib)", True)
    shown.SetScalarBarVisibility(view, True)
    bar = simple.GetScalarBar(lut, view)
    bar.Title = args.field
    bar.ComponentTitle = ""
    bar.TitleColor = [0.0, 0.0, 0.0]
    bar.LabelColor = [0.0, 0.0, 0.0]

    levels = amr.GetNumberOfLevels()
    for level in range(levels):
        if amr.GetNumberOfDataSets(level) == 0:
            continue
        pick = simple.ExtractLevelLegacy(Input=reader)
        pick.Levels = [level]
        cut = simple.Slice(Input=pick)
        cut.SliceType = "Plane"
        cut.SliceType.Origin = whole.SliceType.Origin
        cut.SliceType.Normal = [0.0, 0.0, 1.0]
        # Each block's slice is a rectangle; its boundary edges are the
        # patch's outline in the plane.
        edges = simple.FeatureEdges(Input=cut)
        edges.BoundaryEdges = 1
        edges.FeatureEdges = 0
        edges.NonManifoldEdges = 0
        edges.ManifoldEdges = 0
        lines = simple.Show(edges, view)
        lines.ColorArrayName = ["POINTS", ""]
        lines.AmbientColor = LEVEL_COLOURS[level % len(LEVEL_COLOURS)]
        lines.DiffuseColor = LEVEL_COLOURS[level % len(LEVEL_COLOURS)]
        lines.LineWidth = 1.5 if level > 0 else 2.5
        # Lift the outlines a little towards the camera so they draw over
        # the slice.
        lines.Position = [0.0, 0.0, 1e-3 * (bounds[5] - bounds[4])]

    # A first render resets the camera to the data; the view is set after.
    simple.Render(view)
    # The domain a little left of centre: the colour bar goes on the right.
    cx = 0.5 * (bounds[0] + bounds[1]) + 0.08 * (bounds[1] - bounds[0])
    cy = 0.5 * (bounds[2] + bounds[3])
    view.CameraPosition = [cx, cy, z + 4.0]
    view.CameraFocalPoint = [cx, cy, z]
    view.CameraViewUp = [0.0, 1.0, 0.0]
    view.CameraParallelProjection = 1
    width, height = bounds[1] - bounds[0], bounds[3] - bounds[2]
    aspect = args.size[0] / float(args.size[1])
    view.CameraParallelScale = 0.56 * max(height, width / aspect * 1.3)
    label = simple.Text(Text="%s at z = %.3g, t = %.4g; patch outlines by level" % (args.field, z, t or 0.0))
    text = simple.Show(label, view)
    text.Color = [0.0, 0.0, 0.0]
    text.FontSize = 14
    text.WindowLocation = "Upper Center"
    simple.Render(view)
    simple.SaveScreenshot(args.png, view, ImageResolution=args.size, TransparentBackground=0)
    print("render_sphere: %s (time %s, z = %g, %d levels)" % (args.png, t, z, levels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
