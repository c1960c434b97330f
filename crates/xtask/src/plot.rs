//! Plots of measured figures: line charts from a CSV table, as SVG, each
//! with a PNG copy beside it (rendered by resvg, text in the system's
//! sans-serif fonts).
//!
//! The table has a header and three columns, `series,x,y` (further
//! columns, such as the date and the machine of a figure, are kept for the
//! reader and ignored here); rows of one series are joined in the order
//! given. Reference points (a published figure, a goal) are drawn as
//! labelled markers, and `--ideal` adds the line `y = x` (perfect
//! scaling).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What `cargo xtask plot` draws.
#[derive(clap::Args)]
pub struct PlotArgs {
    /// The table: `series,x,y` per row after a header line.
    #[arg(long)]
    csv: PathBuf,
    /// The SVG file written.
    #[arg(long)]
    out: PathBuf,
    /// The chart's title.
    #[arg(long, default_value = "")]
    title: String,
    /// The x axis' label, with its unit.
    #[arg(long, default_value = "x")]
    x_label: String,
    /// The y axis' label, with its unit.
    #[arg(long, default_value = "y")]
    y_label: String,
    /// Also draws `y = x` (ideal scaling).
    #[arg(long)]
    ideal: bool,
    /// A reference point `LABEL@X,Y` (repeatable).
    #[arg(long = "marker", value_name = "LABEL@X,Y")]
    markers: Vec<String>,
}

/// Series colours: distinct on white and for common colour blindness
/// (Okabe and Ito's, less the yellow, and a grey); a ninth series takes
/// the first colour again.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
];

/// One series of a line chart.
#[derive(Debug)]
pub struct Series {
    /// The legend's entry.
    pub name: String,
    /// The points, joined in this order.
    pub points: Vec<(f64, f64)>,
}

/// A reference point: its label and position.
pub type Marker = (String, f64, f64);

/// Titles and options of a line chart.
pub struct LineChart<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// The x axis' label, with its unit.
    pub x_label: &'a str,
    /// The y axis' label, with its unit.
    pub y_label: &'a str,
    /// Also draws `y = x`.
    pub ideal: bool,
    /// Where the legend goes.
    pub legend: Corner,
}

/// A corner of a chart's plotting area.
#[derive(Clone, Copy)]
pub enum Corner {
    /// Upper left.
    UpperLeft,
    /// Upper right.
    UpperRight,
    /// Lower right.
    LowerRight,
}

impl Corner {
    fn position(self) -> SeriesLabelPosition {
        match self {
            Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
            Corner::UpperRight => SeriesLabelPosition::UpperRight,
            Corner::LowerRight => SeriesLabelPosition::LowerRight,
        }
    }
}

/// Reads the table at `path`.
fn read_table(path: &Path) -> Result<Vec<Series>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut series: Vec<Series> = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let [name, x, y, ..] = cols[..] else {
            bail!("{}:{}: expected series,x,y", path.display(), n + 1);
        };
        let num = |s: &str, what: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .with_context(|| {
                    format!("{}:{}: {what} {s:?} is not a number", path.display(), n + 1)
                })
        };
        let point = (num(x, "x")?, num(y, "y")?);
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: name.to_string(),
                points: vec![point],
            }),
        }
    }
    if series.is_empty() {
        bail!("{}: no rows after the header", path.display());
    }
    Ok(series)
}

/// Parses `LABEL@X,Y`.
fn parse_marker(m: &str) -> Result<(String, f64, f64)> {
    let (label, at) = m
        .rsplit_once('@')
        .with_context(|| format!("marker {m:?}: expected LABEL@X,Y"))?;
    let (x, y) = at
        .split_once(',')
        .with_context(|| format!("marker {m:?}: expected LABEL@X,Y"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .with_context(|| format!("marker {m:?}: {s:?} is not a number"))
    };
    Ok((label.to_string(), num(x)?, num(y)?))
}

/// Draws the chart of `cargo xtask plot`.
pub fn run(args: &PlotArgs) -> Result<()> {
    let series = read_table(&args.csv)?;
    let markers = args
        .markers
        .iter()
        .map(|m| parse_marker(m))
        .collect::<Result<Vec<_>>>()?;
    let chart = LineChart {
        title: &args.title,
        x_label: &args.x_label,
        y_label: &args.y_label,
        ideal: args.ideal,
        legend: Corner::UpperLeft,
    };
    line_chart(&args.out, &chart, &series, &markers)?;
    println!("xtask plot: wrote {}", args.out.display());
    Ok(())
}

/// Draws `series` and `markers` as a line chart into the SVG file `out`;
/// both axes start at 0.
pub fn line_chart(out: &Path, c: &LineChart, series: &[Series], markers: &[Marker]) -> Result<()> {
    let all = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(markers.iter().map(|m| (m.1, m.2)));
    let (mut x_max, mut y_max) = (0.0f64, 0.0f64);
    for (x, y) in all {
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    if c.ideal {
        y_max = y_max.max(x_max);
    }
    // Small integer axes (GPU counts) get a tick per unit.
    let small = x_max <= 16.0;
    let x_range = if small {
        0.0..x_max + 0.5
    } else {
        0.0..x_max * 1.05
    };
    let y_range = 0.0..y_max * 1.15 + if y_max > 2.0 { 0.1 } else { 0.0 };
    render(out, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(x_range.clone(), y_range.clone())?;
        let mut mesh = chart.configure_mesh();
        if small {
            mesh.x_labels(x_range.end.ceil() as usize + 1);
        }
        mesh.x_label_formatter(&|v| format!("{v}"))
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .draw()?;
        if c.ideal {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, 0.0), (x_range.end, x_range.end)],
                    BLACK.mix(0.3).stroke_width(1),
                ))?
                .label("ideal (y = x)")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK.mix(0.3)));
        }
        for (k, s) in series.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        // Labels sit left of their markers, alternately above and below,
        // so that close reference points stay readable.
        for (k, (label, x, y)) in markers.iter().enumerate() {
            let mark = RGBColor(150, 20, 20);
            let v = if k % 2 == 0 { VPos::Bottom } else { VPos::Top };
            let style = ("sans-serif", 13)
                .into_font()
                .color(&mark)
                .pos(Pos::new(HPos::Right, v));
            chart.draw_series(std::iter::once(
                EmptyElement::at((*x, *y))
                    + TriangleMarker::new((0, 0), 6, mark.filled())
                    + Text::new(label.clone(), (-10, 0), style),
            ))?;
        }
        legend(&mut chart, c.legend.position())
    })
}

/// Draws into a white SVG file `out` of 720 × 480 pixels, and its PNG copy
/// ([`png_copy`]).
fn render(
    out: &Path,
    draw: impl FnOnce(
        DrawingArea<SVGBackend, plotters::coord::Shift>,
    ) -> std::result::Result<(), Box<dyn std::error::Error>>,
) -> Result<()> {
    {
        let root = SVGBackend::new(out, (720, 480)).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(Into::into)
            .and_then(|()| draw(root.clone()))
            .and_then(|()| root.present().map_err(Into::into));
        drawn.map_err(|e| anyhow::anyhow!("drawing {}: {e}", out.display()))?;
    }
    png_copy(out).map(drop)
}

/// Sans-serif families tried in turn for the PNG copies' text (plotters
/// names the generic `sans-serif`, which resvg maps to Arial unless told).
const SANS: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// Renders the SVG file `svg` at twice its size into a PNG file beside it
/// (same name, `.png`) and returns that file's path. Text needs one of the
/// [`SANS`] families installed (Debian: `fonts-dejavu-core`); without any,
/// the copy is written without its text and a warning says so.
pub fn png_copy(svg: &Path) -> Result<PathBuf> {
    use resvg::{tiny_skia, usvg};
    let data = std::fs::read(svg).with_context(|| format!("reading {}", svg.display()))?;
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    let family = SANS.iter().find(|f| {
        db.faces()
            .any(|face| face.families.iter().any(|(name, _)| name == *f))
    });
    match family {
        Some(f) => db.set_sans_serif_family(*f),
        None => eprintln!(
            "warning: none of the fonts {SANS:?} is installed: {} gets no text",
            svg.with_extension("png").display()
        ),
    }
    let tree =
        usvg::Tree::from_data(&data, &opt).with_context(|| format!("parsing {}", svg.display()))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(2 * size.width(), 2 * size.height())
        .with_context(|| format!("{} has no area", svg.display()))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(2.0, 2.0),
        &mut pixmap.as_mut(),
    );
    let png = svg.with_extension("png");
    pixmap
        .save_png(&png)
        .with_context(|| format!("writing {}", png.display()))?;
    Ok(png)
}

/// The series' legend, framed, at `position`.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.4))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// One group of bars: its label under the axis and one value per series
/// (`None` where a series has none).
pub struct BarGroup {
    /// The label under the group.
    pub label: String,
    /// One value per series, in the order of the series' names.
    pub values: Vec<Option<f64>>,
}

/// Draws grouped bars on a logarithmic axis from 1 (ratios) into the SVG
/// file `out`, each bar labelled with its value.
pub fn ratio_bars(
    out: &Path,
    title: &str,
    y_label: &str,
    names: &[&str],
    groups: &[BarGroup],
) -> Result<()> {
    let y_max = groups
        .iter()
        .flat_map(|g| g.values.iter().flatten().copied())
        .fold(1.0f64, f64::max);
    let n = names.len().max(1) as f64;
    render(out, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(
                -0.5f64..groups.len() as f64 - 0.5,
                // Headroom above the tallest bar for the legend, a line
                // per series.
                (1.0f64..y_max * (1.0 + 0.5 * n)).log_scale(),
            )?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_labels(groups.len().max(1))
            .x_label_formatter(&|v| {
                let k = v.round();
                if (v - k).abs() < 1e-6 && k >= 0.0 {
                    groups
                        .get(k as usize)
                        .map_or(String::new(), |g| g.label.clone())
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .draw()?;
        let width = 0.8 / n;
        for (s, name) in names.iter().enumerate() {
            let color = PALETTE[s % PALETTE.len()];
            let bars = groups.iter().enumerate().filter_map(|(k, g)| {
                let v = (*g.values.get(s)?)?;
                let x0 = k as f64 - 0.4 + s as f64 * width;
                Some((x0, v))
            });
            let bars: Vec<(f64, f64)> = bars.collect();
            chart
                .draw_series(bars.iter().map(|&(x0, v)| {
                    Rectangle::new([(x0, 1.0), (x0 + width * 0.92, v)], color.filled())
                }))?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
            // Five bars to a group leave room for small labels only.
            let size = if names.len() > 3 { 9 } else { 12 };
            let style = ("sans-serif", size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart.draw_series(bars.iter().map(|&(x0, v)| {
                Text::new(format!("{v:.2}"), (x0 + width * 0.46, v), style.clone())
            }))?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// One bar of [`ranked_bars`]: its label, value and series (an index into
/// the series' names, which pick its colour).
pub struct RankedBar {
    pub label: String,
    pub value: f64,
    pub series: usize,
}

/// Draws one horizontal bar per entry, top to bottom in the given order,
/// on a logarithmic axis from 1 into the SVG file `out`, each bar labelled
/// on the left and its value at its end; the legend names the series.
pub fn ranked_bars(
    out: &Path,
    title: &str,
    x_label: &str,
    names: &[&str],
    bars: &[RankedBar],
) -> Result<()> {
    let x_max = bars.iter().map(|b| b.value).fold(1.0f64, f64::max);
    let n = bars.len();
    render(out, |root| {
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(170)
            // Room at the right for the largest bar's value.
            .build_cartesian_2d((1.0f64..x_max * 4.0).log_scale(), -0.5f64..n as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_labels(n.max(1))
            .y_label_style(("sans-serif", 11))
            .y_label_formatter(&|v| {
                // Position 0 at the bottom: the first bar goes on top.
                let k = v.round();
                if (v - k).abs() < 1e-6 && k >= 0.0 {
                    bars.get(n - 1 - k as usize)
                        .map_or(String::new(), |b| b.label.clone())
                } else {
                    String::new()
                }
            })
            .x_desc(x_label)
            .draw()?;
        let style = ("sans-serif", 11)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (s, name) in names.iter().enumerate() {
            let color = PALETTE[s % PALETTE.len()];
            let mine: Vec<(f64, f64)> = bars
                .iter()
                .enumerate()
                .filter(|(_, b)| b.series == s)
                .map(|(k, b)| ((n - 1 - k) as f64, b.value))
                .collect();
            chart
                .draw_series(mine.iter().map(|&(y, v)| {
                    Rectangle::new([(1.0, y - 0.35), (v, y + 0.35)], color.filled())
                }))?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
            chart.draw_series(
                mine.iter()
                    .map(|&(y, v)| Text::new(format!(" {v:.0}"), (v, y), style.clone())),
            )?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_tables_parse_or_say_where_they_fail() {
        assert_eq!(
            parse_marker("paper, 4 nodes: 3.8x@4,3.8").unwrap(),
            ("paper, 4 nodes: 3.8x".to_string(), 4.0, 3.8)
        );
        assert!(parse_marker("no position").is_err());
        assert!(parse_marker("bad@4,x").is_err());

        let dir = std::env::temp_dir().join(format!("xtask-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.csv");
        std::fs::write(&good, "series,x,y,note\na,1,1,n\nb,1,2,n\na,2,1.5,n\n").unwrap();
        let t = read_table(&good).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].points, vec![(1.0, 1.0), (2.0, 1.5)]);
        let bad = dir.join("bad.csv");
        std::fs::write(&bad, "series,x,y\na,1,1\na,two,1\n").unwrap();
        let e = read_table(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.csv:3") && e.contains("\"two\""), "{e}");
        std::fs::write(&bad, "series,x,y\n").unwrap();
        assert!(read_table(&bad).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
