//! A picture of where a build's time went, as `systemd-analyze plot` draws a boot: one row per
//! image, its layers bar after bar on a time axis (the base, then each role: built, from the
//! layer cache or from the registry cache), each built role split at its costliest tasks and
//! labelled with its compiles (how many the compile cache served), then what the build did after
//! its roles (the last layers' writes, the build-only packages' removal, verify, the outputs).
//! Written as `timeline.svg` beside each image's report (which links to it), and for all the
//! images of a build with `build --timeline FILE.svg`, side by side.

use std::fmt::Write;

use crate::report::Report;

/// Pixels per second (the axis scales down for long builds to stay about 1400 wide).
fn scale(longest: f64) -> f64 {
    if longest <= 0.0 {
        return 1.0;
    }
    (1400.0 / longest).clamp(0.05, 20.0)
}

/// The colour of a layer's bar.
fn colour(cached: bool, from_registry: bool) -> &'static str {
    match (cached, from_registry) {
        (_, true) => "#7fc97f",
        (true, false) => "#bdbdbd",
        (false, false) => "#6baed6",
    }
}

/// Text safe inside SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG of `reports`, one row each.
pub fn svg(reports: &[&Report]) -> String {
    let longest = reports
        .iter()
        .map(|r| {
            r.layers
                .iter()
                .map(|l| l.seconds)
                .sum::<f64>()
                .max(r.seconds)
        })
        .fold(0.0, f64::max);
    let px = scale(longest);
    let (row, top, left) = (46.0, 40.0, 180.0);
    let width = left + longest * px + 40.0;
    let height = top + row * reports.len() as f64 + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        out,
        r#"<text x="10" y="20" font-size="13">where the build's time went: built (blue), layer cache (grey), registry cache (green), after the roles (orange); {longest:.1} s in all</text>"#
    );
    for tick in (0..=(longest as u64)).step_by(tick_step(longest)) {
        let x = left + tick as f64 * px;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#eeeeee"/><text x="{x:.1}" y="{:.1}" fill="#777777">{tick}s</text>"##,
            height - 30.0,
            height - 16.0
        );
    }
    for (i, report) in reports.iter().enumerate() {
        image_row(&mut out, report, top + row * i as f64, (left, px));
    }
    out.push_str("</svg>\n");
    out
}

/// Seconds between the axis' ticks.
fn tick_step(longest: f64) -> usize {
    [1, 5, 10, 30, 60, 120, 300, 600]
        .into_iter()
        .find(|step| longest / *step as f64 <= 12.0)
        .unwrap_or(1200)
}

/// One image's row: its name, then its layers' bars, each built one marked with its two
/// costliest tasks.
fn image_row(out: &mut String, report: &Report, y: f64, (left, px): (f64, f64)) {
    let _ = writeln!(
        out,
        r#"<text x="10" y="{:.1}">{}</text>"#,
        y + 22.0,
        escape(&report.image)
    );
    let mut at = 0.0;
    for layer in &report.layers {
        let (x, w) = (left + at * px, (layer.seconds * px).max(1.0));
        let state = match (layer.cached, layer.from_registry) {
            (_, true) => "registry cache",
            (true, false) => "layer cache",
            (false, false) => "built",
        };
        let compiles = compiles(layer);
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="30" fill="{}" stroke="white"><title>{}: {:.1} s ({state}){}</title></rect>"#,
            colour(layer.cached, layer.from_registry),
            escape(&layer.role),
            layer.seconds,
            compiles
                .as_ref()
                .map(|c| format!("; {c}"))
                .unwrap_or_default()
        );
        if w > 40.0 {
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                x + 3.0,
                y + 19.0,
                escape(&layer.role)
            );
        }
        if let Some(compiles) = compiles.filter(|_| w > 120.0) {
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" font-size="9">{compiles}</text>"#,
                x + 3.0,
                y + 29.0
            );
        }
        let mut costly: Vec<_> = layer.costs.iter().filter(|_| !layer.cached).collect();
        costly.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        for cost in costly.iter().take(2).filter(|c| c.seconds * px > 2.0) {
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="6" fill="rgb(33,113,181)"><title>{}: {:.1} s</title></rect>"#,
                y + 31.0,
                cost.seconds * px,
                escape(&cost.task),
                cost.seconds
            );
        }
        at += layer.seconds;
    }
    let after = report.seconds - at;
    if after > 0.05 {
        let _ = writeln!(
            out,
            r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="30" fill="#fdae6b" stroke="white"><title>after the roles (the last layers written, build-only packages removed, verify, the outputs): {after:.1} s</title></rect>"##,
            left + at * px,
            (after * px).max(1.0)
        );
    }
}

/// What a built layer's compiles found in the compile cache, if it compiled anything.
fn compiles(layer: &crate::report::LayerEntry) -> Option<String> {
    let c = &layer.compiles;
    let all = c.hits + c.misses;
    (all > 0 && !layer.cached).then(|| format!("{all} compiles, {} from the compile cache", c.hits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::LayerEntry;

    fn layer(role: &str, seconds: f64, cached: bool) -> LayerEntry {
        LayerEntry {
            role: role.into(),
            digest: "sha256:00".into(),
            size: 1,
            cached,
            from_registry: false,
            seconds,
            why: Vec::new(),
            packages_added: Vec::new(),
            built_at: None,
            built_seconds: seconds,
            costs: Vec::new(),
            compiles: Default::default(),
        }
    }

    #[test]
    fn each_layer_is_a_bar_as_long_as_its_time_in_its_images_row() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "image": "rocky<9>", "manifest": "m", "config": "c", "kernel": null, "mofed": null,
            "nvidia": null, "size": 1, "seconds": 30.0, "layers": [], "verify": null,
        }))
        .expect("report");
        let report = Report {
            layers: vec![layer("base", 10.0, true), layer("nvidia", 20.0, false)],
            ..report
        };
        let drawn = svg(&[&report]);
        assert!(drawn.starts_with("<svg") && drawn.trim_end().ends_with("</svg>"));
        assert!(drawn.contains("rocky&lt;9&gt;"), "names escaped");
        assert!(drawn.contains("<title>base: 10.0 s (layer cache)</title>"));
        assert!(drawn.contains("<title>nvidia: 20.0 s (built)</title>"));
        // 30 s on a 1400 px axis: 20 s is twice as wide as 10 s.
        let width = |role: &str| {
            let at = drawn.find(&format!("<title>{role}:")).expect("bar");
            let bar = &drawn[drawn[..at].rfind("<rect").expect("rect")..at];
            let w = bar.split("width=\"").nth(1).expect("width");
            w[..w.find('"').expect("quote")]
                .parse::<f64>()
                .expect("number")
        };
        assert!((width("nvidia") - 2.0 * width("base")).abs() < 0.5);
    }

    #[test]
    fn a_built_layer_says_its_compiles_and_the_time_after_the_roles_is_drawn() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "image": "debian", "manifest": "m", "config": "c", "kernel": null, "mofed": null,
            "nvidia": null, "size": 1, "seconds": 100.0, "layers": [], "verify": null,
        }))
        .expect("report");
        let mut nvidia = layer("nvidia", 80.0, false);
        nvidia.compiles.hits = 190;
        nvidia.compiles.misses = 2;
        let report = Report {
            layers: vec![layer("base", 10.0, true), nvidia],
            ..report
        };
        let drawn = svg(&[&report]);
        assert!(drawn.contains(
            "<title>nvidia: 80.0 s (built); 192 compiles, 190 from the compile cache</title>"
        ));
        assert!(drawn.contains(">192 compiles, 190 from the compile cache</text>"));
        assert!(drawn.contains("verify, the outputs): 10.0 s</title>"));
        assert!(
            !drawn.contains("base: 10.0 s (layer cache);"),
            "nothing compiled"
        );
    }
}
