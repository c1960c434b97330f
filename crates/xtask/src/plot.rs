//! Plots of measured figures: line charts from a CSV table, as SVG.
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

/// Series colours: distinct on white and for common colour blindness.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
];

/// One series of the table.
#[derive(Debug)]
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
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

/// Draws the chart.
pub fn run(args: &PlotArgs) -> Result<()> {
    let series = read_table(&args.csv)?;
    let markers = args
        .markers
        .iter()
        .map(|m| parse_marker(m))
        .collect::<Result<Vec<_>>>()?;
    let all = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(markers.iter().map(|m| (m.1, m.2)));
    let (mut x_max, mut y_max) = (0.0f64, 0.0f64);
    for (x, y) in all {
        x_max = x_max.max(x);
        y_max = y_max.max(y);
    }
    if args.ideal {
        y_max = y_max.max(x_max);
    }
    let x_range = 0.0..x_max + 0.5;
    let y_range = 0.0..y_max * 1.15 + 0.1;
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(&args.out, (720, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&args.title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(x_range.clone(), y_range.clone())?;
        chart
            .configure_mesh()
            .x_labels(x_range.end.ceil() as usize + 1)
            .x_label_formatter(&|v| format!("{v}"))
            .x_desc(&args.x_label)
            .y_desc(&args.y_label)
            .draw()?;
        if args.ideal {
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", args.out.display()))?;
    println!("xtask plot: wrote {}", args.out.display());
    Ok(())
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
