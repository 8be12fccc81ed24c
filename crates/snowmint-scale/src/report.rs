//! `report.html`: the summary, and two charts over the run's time (held
//! identities; etcd's requests and transactions per second) with the
//! phases shaded. One file, inline SVG, no external assets.

use std::fmt::Write as _;

use crate::config::{Config, Phase, Sample};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 30.0;

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round number of at least `max`, for an axis.
fn nice(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let step = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * step)
        .find(|v| *v >= max)
        .unwrap_or(10.0 * step)
}

/// One line of a chart: its name, its colour, and its value in a sample.
type Series<'a> = (&'a str, &'a str, fn(&Sample) -> f64);

/// One chart: `series` over time.
fn chart(title: &str, samples: &[Sample], phases: &[Phase], series: &[Series<'_>]) -> String {
    let t_max = samples.last().map_or(1.0, |s| s.t).max(1.0);
    let y_max = nice(
        samples
            .iter()
            .flat_map(|s| series.iter().map(move |(_, _, f)| f(s)))
            .fold(0.0, f64::max),
    );
    let x = |t: f64| LEFT + (t / t_max) * (WIDTH - LEFT - RIGHT);
    let y = |v: f64| TOP + (1.0 - v / y_max) * (HEIGHT - TOP - BOTTOM);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11" role="img" aria-label="{}">"#,
        esc(title)
    );
    for (i, phase) in phases.iter().enumerate() {
        let fill = ["#e8f0fe", "#e6f4ea", "#fef7e0", "#fce8e6"][i % 4];
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{} {:.1}-{:.1} s</title></rect><text x="{:.1}" y="{:.1}" fill="#555">{}</text>"##,
            x(phase.from),
            (x(phase.to) - x(phase.from)).max(1.0),
            HEIGHT - TOP - BOTTOM,
            esc(phase.name),
            phase.from,
            phase.to,
            x(phase.from) + 3.0,
            TOP + 12.0,
            esc(phase.name)
        );
    }
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v}</text>"##,
            WIDTH - RIGHT,
            y(v),
            y(v),
            LEFT - 4.0,
            y(v) + 4.0
        );
    }
    let ticks = 10;
    for i in 0..=ticks {
        let t = t_max * f64::from(i) / f64::from(ticks);
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.0} s</text>"#,
            x(t),
            HEIGHT - 10.0
        );
    }
    for (name, colour, value) in series {
        let points: Vec<String> = samples
            .iter()
            .map(|s| format!("{:.1},{:.1}", x(s.t), y(value(s))))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"><title>{}</title></polyline>"#,
            points.join(" "),
            esc(name)
        );
    }
    svg.push_str("</svg>");
    let legend: Vec<String> = series
        .iter()
        .map(|(name, colour, _)| {
            format!(
                r#"<span style="color:{colour}">&#9632;</span> {}"#,
                esc(name)
            )
        })
        .collect();
    format!(
        "<h2>{}</h2>\n<p>{}</p>\n{svg}\n",
        esc(title),
        legend.join(" &nbsp; ")
    )
}

/// The page.
pub fn html(
    summary: &serde_json::Value,
    samples: &[Sample],
    phases: &[Phase],
    failures: &[String],
    config: &Config,
) -> String {
    let mut page = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>snowmint scale run</title>\
         <style>body{font-family:sans-serif;margin:2em;max-width:960px}\
         table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\
         .fail{color:#b00}.pass{color:#070}</style></head><body>\n",
    );
    let verdict = if failures.is_empty() {
        "<p class=\"pass\"><strong>PASS</strong>: every bound held.</p>".to_owned()
    } else {
        let items: Vec<String> = failures
            .iter()
            .map(|f| format!("<li>{}</li>", esc(f)))
            .collect();
        format!(
            "<p class=\"fail\"><strong>FAIL</strong></p><ul class=\"fail\">{}</ul>",
            items.join("")
        )
    };
    let _ = write!(
        page,
        "<h1>snowmint scale run: {} LeasedGenerators, one 3-member etcd</h1>\n{verdict}\n\
         <p>Lease TTL {} s; each generator mints {} IDs every {} ms; steady state measured for {} s, \
         the waiter for {} s; the storm kills {} holders at once.</p>\n<table>",
        summary["identities"],
        config.lease_ttl,
        config.batch,
        config.mint_every.as_millis(),
        config.steady.as_secs(),
        config.waiter.as_secs(),
        config.storm.min(config.identities),
    );
    if let Some(fields) = summary.as_object() {
        for (key, value) in fields {
            let _ = write!(
                page,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(key),
                esc(&value.to_string())
            );
        }
    }
    page.push_str("</table>\n");
    page.push_str(&chart(
        "Identities held (fence open)",
        samples,
        phases,
        &[("held identities", "#1a73e8", |s| s.held as f64)],
    ));
    page.push_str(&chart(
        "etcd requests per second (all members, as etcd counts them)",
        samples,
        phases,
        &[
            ("requests/s", "#d93025", |s| s.requests_per_s),
            ("Txn/s", "#188038", |s| s.txns_per_s),
        ],
    ));
    page.push_str("</body></html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_round_up() {
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(nice(7.0), 10.0);
        assert_eq!(nice(1024.0), 2000.0);
        assert_eq!(nice(180.0), 200.0);
    }
}
