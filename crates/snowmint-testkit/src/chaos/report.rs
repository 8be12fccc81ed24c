//! The report of one run in `artifacts/chaos/`: `ids.txt` (every
//! acknowledged ID, one a line), `summary.json` (the figures and the
//! verdict) and `report.html` (a timeline, one lane per instance and per
//! etcd member, or one for the database server), each naming the
//! coordinator.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write as _};
use std::path::Path;

use serde_json::json;

use super::checker::Findings;
use super::config::{Config, Outcome};
use super::history::{History, Readiness};
use super::schedule::{Coordinator, Fault, FaultKind};

/// What the report is made of.
#[derive(Debug)]
pub struct Input<'a> {
    /// The run's configuration.
    pub config: &'a Config,
    /// Wall time (Unix ms) of the moment times in the history count from.
    pub started_unix_ms: u64,
    /// What the run observed.
    pub history: &'a History,
    /// What the checker found.
    pub findings: &'a Findings,
    /// The schedule the nemesis was given.
    pub schedule: &'a [Fault],
    /// The lanes: every instance's name (by index), then every etcd
    /// member's, or the database server's.
    pub lanes: &'a [String],
    /// Whether SIGINT/SIGTERM cut the run short.
    pub interrupted: bool,
}

/// Per instance: the share of probes `/readyz` answered 200, not 200, and
/// not at all.
fn availability(input: &Input<'_>, instance: usize) -> (f64, f64, f64, usize) {
    let mut counts = [0usize; 3];
    for probe in input
        .history
        .probes
        .iter()
        .filter(|p| p.instance == instance)
    {
        counts[match probe.readiness {
            Readiness::Ready => 0,
            Readiness::NotReady => 1,
            Readiness::Unreachable => 2,
        }] += 1;
    }
    let total = counts.iter().sum::<usize>();
    let share = |n: usize| {
        if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        }
    };
    (share(counts[0]), share(counts[1]), share(counts[2]), total)
}

/// Every violation: the checker's, faults of the schedule that did not
/// happen, a run that checked nothing (no ID minted) or whose `stale_leader`
/// faults never made their target refuse a renewal, incidents, and an
/// interrupted run.
fn violations(input: &Input<'_>) -> Vec<String> {
    let mut out: Vec<String> = input
        .findings
        .violations
        .iter()
        .map(ToString::to_string)
        .collect();
    if input.findings.ids == 0 {
        out.push("no ID was minted: the checks had nothing to check".to_owned());
    }
    // A stale leader that made nobody refuse a keep-alive answer showed
    // nothing of etcd issue 15247; one refusal in the run shows the guard.
    let stale: Vec<_> = input
        .history
        .faults
        .iter()
        .filter(|r| r.kind == FaultKind::StaleLeader && r.happened)
        .collect();
    if !stale.is_empty() && !stale.iter().any(|r| r.unconfirmed_renewals > Some(0)) {
        let unread = stale
            .iter()
            .filter(|r| r.unconfirmed_renewals.is_none())
            .count();
        out.push(format!(
            "stale_leader: {} happened, none made its target refuse a keep-alive answer \
             ({unread} of them unread: the target did not answer /metrics)",
            stale.len()
        ));
    }
    for (kind, &count) in &input.findings.counts {
        if count > super::checker::LISTED_PER_KIND as u64 {
            out.push(format!("... {count} {kind} violations in all"));
        }
    }
    let (scheduled, happened) = fault_counts(input);
    for kind in FaultKind::ALL {
        let (s, h) = (scheduled[&kind], happened[&kind]);
        if s != h {
            out.push(format!(
                "fault missing: {} scheduled {s} times, happened {h}",
                kind.name()
            ));
        }
    }
    for (at_us, what) in &input.history.incidents {
        out.push(format!("incident at {:.1} s: {what}", *at_us as f64 / 1e6));
    }
    if input.interrupted {
        out.push("interrupted before the end".to_owned());
    }
    out
}

fn fault_counts(input: &Input<'_>) -> (BTreeMap<FaultKind, u64>, BTreeMap<FaultKind, u64>) {
    let mut scheduled: BTreeMap<FaultKind, u64> = FaultKind::ALL.iter().map(|&k| (k, 0)).collect();
    let mut happened = scheduled.clone();
    for fault in input.schedule {
        *scheduled.entry(fault.kind).or_default() += 1;
    }
    for record in input.history.faults.iter().filter(|r| r.happened) {
        *happened.entry(record.kind).or_default() += 1;
    }
    (scheduled, happened)
}

/// Writes the three files into `out` and says how the run went.
///
/// # Errors
///
/// When a file cannot be written.
pub fn write(input: &Input<'_>, out: &Path) -> std::io::Result<Outcome> {
    let mut ids = BufWriter::new(std::fs::File::create(out.join("ids.txt"))?);
    for mint in &input.history.mints {
        for id in &mint.ids {
            writeln!(ids, "{id}")?;
        }
    }
    ids.flush()?;

    let violations = violations(input);
    let passed = violations.is_empty();
    let (scheduled, happened) = fault_counts(input);
    // Only the kinds this coordinator's runs schedule.
    let kinds = input.config.coordinator.all_kinds();
    let names = |counts: &BTreeMap<FaultKind, u64>| {
        counts
            .iter()
            .filter(|(k, _)| kinds.contains(k))
            .map(|(k, n)| (k.name().to_owned(), json!(n)))
            .collect::<serde_json::Map<_, _>>()
    };
    let instances = input.config.instances + 1;
    let mut availability_json = serde_json::Map::new();
    let mut worst = 1.0f64;
    for i in 0..instances {
        let (ready, not_ready, unreachable, probes) = availability(input, i);
        worst = worst.min(ready);
        availability_json.insert(
            input.lanes[i].clone(),
            json!({"ready": round(ready), "not_ready": round(not_ready),
                   "unreachable": round(unreachable), "probes": probes}),
        );
    }
    let errors: serde_json::Map<_, _> = input
        .history
        .errors
        .iter()
        .enumerate()
        .map(|(i, by_status)| {
            let by_status: serde_json::Map<_, _> = by_status
                .iter()
                .map(|(s, n)| {
                    let key = if *s == 0 {
                        "no_answer".to_owned()
                    } else {
                        s.to_string()
                    };
                    (key, json!(n))
                })
                .collect();
            (input.lanes[i].clone(), json!(by_status))
        })
        .collect();
    let schedule: Vec<_> = input
        .schedule
        .iter()
        .enumerate()
        .map(|(index, f)| {
            let record = input.history.faults.iter().find(|r| r.index == index);
            json!({
                "kind": f.kind.name(),
                "planned_at_s": f.at_ms as f64 / 1e3,
                "target": record.and_then(|r| r.lane.clone()),
                "happened": record.is_some_and(|r| r.happened),
                "started_s": record.map(|r| r.start_us as f64 / 1e6),
                "ended_s": record.and_then(|r| r.end_us).map(|t| t as f64 / 1e6),
                "detail": record.map(|r| r.detail.clone()),
                "unconfirmed_renewals": record.and_then(|r| r.unconfirmed_renewals),
            })
        })
        .collect();
    // What the stale_leader faults did: keep-alive answers their target
    // instance did not count (a deposed leader's, or one a read could not
    // confirm in time).
    let stale: Vec<&super::history::FaultRecord> = input
        .history
        .faults
        .iter()
        .filter(|r| r.kind == FaultKind::StaleLeader && r.happened)
        .collect();
    let stale_leader = json!({
        "happened": stale.len(),
        "with_unconfirmed_renewals": stale.iter().filter(|r| r.unconfirmed_renewals > Some(0)).count(),
        "unconfirmed_renewals": stale.iter().filter_map(|r| r.unconfirmed_renewals).sum::<u64>(),
    });
    let etcd = input.config.coordinator == Coordinator::Etcd;
    let summary = json!({
        "coordinator": input.config.coordinator.name(),
        "seed": input.config.seed,
        "seconds": input.config.seconds,
        "instances": input.config.instances,
        "etcd_members": if etcd { input.config.members } else { 0 },
        "database": (!etcd).then(|| input.lanes[instances..].join(",")),
        "free_identities": (!etcd).then(|| super::config::free_identities(input.config)),
        "through_pgbouncer": if input.config.coordinator == Coordinator::Postgres {
            (0..input.config.instances)
                .filter(|&i| super::database::through_pgbouncer(i))
                .map(|i| input.lanes[i].clone())
                .collect::<Vec<_>>()
        } else {
            Vec::new()
        },
        "lease_ttl": input.config.lease_ttl,
        "started_unix_ms": input.started_unix_ms,
        "passed": passed,
        "ids": input.findings.ids,
        "requests": input.history.mints.len(),
        "identities": input.findings.identities,
        "duplicates": input.findings.duplicates,
        "holder_overlaps": input.findings.holder_overlaps,
        "stale_leader": stale_leader,
        "violation_counts": input.findings.counts,
        "faults": names(&happened),
        "faults_scheduled": names(&scheduled),
        "violations": violations,
        "availability": availability_json,
        "errors": errors,
        "schedule": schedule,
    });
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    std::fs::write(out.join("report.html"), html(input, &summary))?;

    let faults: Vec<String> = happened
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{}={n}", k.name()))
        .collect();
    let line = format!(
        "chaos: {} coordinator={} seed={} seconds={} ids={} requests={} duplicates={} violations={} \
         holder_overlaps={} stale_leader_unconfirmed={} faults[{}] availability min={:.1}%",
        if passed { "PASS" } else { "FAIL" },
        input.config.coordinator,
        input.config.seed,
        input.config.seconds,
        input.findings.ids,
        input.history.mints.len(),
        input.findings.duplicates,
        summary["violations"].as_array().map_or(0, Vec::len),
        input.findings.holder_overlaps,
        summary["stale_leader"]["unconfirmed_renewals"],
        faults.join(" "),
        worst * 100.0,
    );
    Ok(Outcome { passed, line })
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Escapes text for HTML and SVG.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const LEFT: f64 = 90.0;
const WIDTH: f64 = 1300.0;
const INSTANCE_LANE: f64 = 60.0;
const MEMBER_LANE: f64 = 28.0;

fn color(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::InstanceKill | FaultKind::StaticKillClockBack | FaultKind::EtcdLeaderKill => {
            "#000000"
        }
        FaultKind::InstancePause | FaultKind::EtcdMemberPause => "#ff9800",
        FaultKind::Partition => "#7b1fa2",
        FaultKind::ClockStep => "#1e88e5",
        FaultKind::EtcdMemberRestart => "#5d4037",
        FaultKind::StaleLeader => "#c62828",
        FaultKind::DbShortPause | FaultKind::DbLongPause => "#ff9800",
        FaultKind::DbCrashRestart => "#5d4037",
        FaultKind::DbPartition => "#7b1fa2",
        FaultKind::DbClockStep => "#1e88e5",
        FaultKind::DbFailover => "#000000",
        FaultKind::RedisShortPause | FaultKind::RedisLongPause => "#ff9800",
        FaultKind::RedisCrashRestart => "#5d4037",
        FaultKind::RedisEmptyRestart => "#000000",
        FaultKind::RedisPartition => "#7b1fa2",
    }
}

/// The timeline, an SVG drawn here, inside a page with the figures.
fn html(input: &Input<'_>, summary: &serde_json::Value) -> String {
    let history = input.history;
    let instances = input.config.instances + 1;
    let end_us = history
        .faults
        .iter()
        .filter_map(|f| f.end_us)
        .chain(history.probes.iter().map(|p| p.at_us))
        .max()
        .unwrap_or(0)
        .max(input.config.seconds * 1_000_000)
        .max(1);
    let plot = WIDTH - LEFT - 10.0;
    let x = |us: u64| LEFT + us as f64 / end_us as f64 * plot;
    let seconds = end_us.div_ceil(1_000_000) as usize;

    // IDs per second per instance, by when the answer arrived.
    let mut rate = vec![vec![0u64; seconds + 1]; instances];
    for mint in &history.mints {
        let second = (mint.end_us / 1_000_000) as usize;
        rate[mint.instance][second.min(seconds)] += mint.ids.len() as u64;
    }
    let peak = rate.iter().flatten().copied().max().unwrap_or(0).max(1);

    let members = input.lanes.len() - instances;
    let top = 30.0;
    let height = top + instances as f64 * INSTANCE_LANE + members as f64 * MEMBER_LANE + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    // Time axis.
    let step = [1, 2, 5, 10, 30, 60, 120, 300, 600]
        .into_iter()
        .find(|s| seconds / s <= 20)
        .unwrap_or(600);
    for s in (0..=seconds).step_by(step) {
        let px = x(s as u64 * 1_000_000);
        let _ = write!(
            svg,
            r##"<line x1="{px:.1}" y1="{}" x2="{px:.1}" y2="{:.1}" stroke="#ddd"/><text x="{px:.1}" y="{}" text-anchor="middle">{s} s</text>"##,
            top - 5.0,
            height - 30.0,
            top - 10.0
        );
    }
    let load_end = x(input.config.seconds * 1_000_000);
    let _ = write!(
        svg,
        r##"<line x1="{load_end:.1}" y1="{}" x2="{load_end:.1}" y2="{:.1}" stroke="#000" stroke-dasharray="4 3"><title>the load stops</title></line>"##,
        top - 5.0,
        height - 30.0
    );

    let mut y = top;
    for (i, lane_rate) in rate.iter().enumerate() {
        let lane = &input.lanes[i];
        let _ = write!(
            svg,
            r##"<text x="4" y="{:.1}" font-weight="bold">{}</text><text x="4" y="{:.1}" fill="#666">peak {}/s</text>"##,
            y + 24.0,
            esc(lane),
            y + 38.0,
            lane_rate.iter().max().unwrap_or(&0)
        );
        // Readiness band: one rectangle per run of equal probe outcomes.
        let probes: Vec<_> = history.probes.iter().filter(|p| p.instance == i).collect();
        let band_y = y + INSTANCE_LANE - 18.0;
        let mut k = 0;
        while k < probes.len() {
            let state = probes[k].readiness;
            let mut j = k;
            while j + 1 < probes.len() && probes[j + 1].readiness == state {
                j += 1;
            }
            let from = probes[k].at_us;
            let to = probes
                .get(j + 1)
                .map_or(probes[j].at_us + 150_000, |p| p.at_us);
            let (fill, what) = match state {
                Readiness::Ready => ("#43a047", "ready"),
                Readiness::NotReady => (
                    "#e53935",
                    "not ready (503: fenced, no identity, clock behind)",
                ),
                Readiness::Unreachable => ("#9e9e9e", "no answer (down or paused)"),
            };
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{band_y:.1}" width="{:.1}" height="12" fill="{fill}"><title>{lane}: {what}, {:.2}-{:.2} s</title></rect>"#,
                x(from),
                (x(to) - x(from)).max(0.5),
                from as f64 / 1e6,
                to as f64 / 1e6
            );
            k = j + 1;
        }
        // Minting rate: one bar per second, scaled to the busiest second of any instance.
        let rate_h = INSTANCE_LANE - 24.0;
        for (s, &n) in lane_rate.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let h = n as f64 / peak as f64 * rate_h;
            let (x0, x1) = (
                x(s as u64 * 1_000_000),
                x((s as u64 + 1).min(seconds as u64) * 1_000_000),
            );
            let _ = write!(
                svg,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#90caf9"><title>{lane}: {n} IDs in second {s}</title></rect>"##,
                band_y - 2.0 - h,
                (x1 - x0 - 1.0).max(0.5)
            );
        }
        faults_on(&mut svg, input, lane, y, INSTANCE_LANE - 4.0, &x);
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{:.1}" x2="{WIDTH}" y2="{:.1}" stroke="#bbb"/>"##,
            y + INSTANCE_LANE,
            y + INSTANCE_LANE
        );
        y += INSTANCE_LANE;
    }
    for lane in &input.lanes[instances..] {
        let _ = write!(
            svg,
            r##"<text x="4" y="{:.1}" font-weight="bold">{}</text><rect x="{LEFT}" y="{:.1}" width="{plot:.1}" height="10" fill="#43a047" opacity="0.5"><title>{lane}: running</title></rect>"##,
            y + 17.0,
            esc(lane),
            y + 9.0,
        );
        faults_on(&mut svg, input, lane, y + 2.0, MEMBER_LANE - 4.0, &x);
        y += MEMBER_LANE;
    }
    svg.push_str("</svg>");

    let mut page = String::new();
    let verdict = if summary["passed"].as_bool() == Some(true) {
        "PASS"
    } else {
        "FAIL"
    };
    let _ = write!(
        page,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>snowmint chaos ({coordinator}): seed {seed}, {verdict}</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}th{{background:#eee}}.fail{{color:#c62828}}.pass{{color:#2e7d32}}</style></head><body>
<h1>snowmint chaos run ({coordinator}): <span class="{class}">{verdict}</span></h1>
<p>Coordinator <b>{coordinator}</b>{through}{free}. Seed <b>{seed}</b>, {seconds} s of load, {ids} IDs acknowledged in {requests} requests by {identities} identities, <b>{duplicates}</b> duplicates, <b>{overlaps}</b> holder overlaps (two instances issuing as one identity at once, each a violation: see docs/distributed.md); the stale_leader faults' targets did not count {unconfirmed} keep-alive answers.
Replay the schedule with <code>scripts/chaos --coordinator {coordinator} --seconds {seconds} --seed {seed} --instances {n}</code> (the timing differs from run to run).</p>"#,
        seed = input.config.seed,
        coordinator = input.config.coordinator,
        through = match summary["through_pgbouncer"].as_array() {
            Some(list) if !list.is_empty() => format!(
                " ({} through PgBouncer in transaction mode)",
                list.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => String::new(),
        },
        free = match summary["free_identities"].as_u64() {
            Some(n) =>
                format!(", {n} identities of the datacenter free (a crowd holds the others)"),
            None => String::new(),
        },
        class = verdict.to_lowercase(),
        seconds = input.config.seconds,
        ids = summary["ids"],
        requests = summary["requests"],
        identities = summary["identities"],
        duplicates = summary["duplicates"],
        overlaps = summary["holder_overlaps"],
        unconfirmed = summary["stale_leader"]["unconfirmed_renewals"],
        n = input.config.instances,
    );
    page.push_str("<h2>Violations</h2>");
    match summary["violations"].as_array() {
        Some(list) if !list.is_empty() => {
            page.push_str("<ul class=\"fail\">");
            for v in list {
                let _ = write!(page, "<li>{}</li>", esc(v.as_str().unwrap_or_default()));
            }
            page.push_str("</ul>");
        }
        _ => page.push_str("<p class=\"pass\">None: no duplicate, every instance's IDs of each identity increased in real time, no two holders of an identity issued in overlapping ranges or at the same time, every response increased, every scheduled fault happened.</p>"),
    }
    page.push_str(
        "<h2>Timeline</h2><p>One lane per instance: blue bars are IDs minted per second \
         (all lanes on one scale); the band below is <code>/readyz</code>, \
         <span style=\"color:#43a047\">ready</span>, <span style=\"color:#e53935\">not ready</span> \
         (fenced, no identity, clock behind), <span style=\"color:#9e9e9e\">no answer</span> (down or paused). \
         One lane per etcd member, or one for the database server. Faults are shaded over their lane from start to heal: \
         <span style=\"color:#000\">kill</span>, <span style=\"color:#ff9800\">pause</span>, \
         <span style=\"color:#7b1fa2\">partition</span>, <span style=\"color:#1e88e5\">clock step</span>, \
         <span style=\"color:#5d4037\">etcd or database restart</span>. Hover for details.</p>",
    );
    page.push_str(&svg);
    page.push_str(
        "<h2>Faults</h2><table><tr><th>kind</th><th>scheduled</th><th>happened</th></tr>",
    );
    for kind in input.config.coordinator.all_kinds() {
        let _ = write!(
            page,
            "<tr><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td></tr>",
            kind.name(),
            summary["faults_scheduled"][kind.name()],
            summary["faults"][kind.name()]
        );
    }
    page.push_str("</table><h2>Availability (share of <code>/readyz</code> probes)</h2><table><tr><th>instance</th><th>ready</th><th>not ready</th><th>no answer</th><th>probes</th></tr>");
    for lane in &input.lanes[..instances] {
        let a = &summary["availability"][lane];
        let pct = |v: &serde_json::Value| format!("{:.1}%", v.as_f64().unwrap_or(0.0) * 100.0);
        let _ = write!(
            page,
            "<tr><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(lane),
            pct(&a["ready"]),
            pct(&a["not_ready"]),
            pct(&a["unreachable"]),
            a["probes"]
        );
    }
    page.push_str("</table><h2>Schedule</h2><table><tr><th>#</th><th>kind</th><th>target</th><th>planned</th><th>started</th><th>healed</th><th>happened</th><th>what</th></tr>");
    if let Some(schedule) = summary["schedule"].as_array() {
        for (n, f) in schedule.iter().enumerate() {
            let s =
                |v: &serde_json::Value| v.as_f64().map_or("-".to_owned(), |t| format!("{t:.2} s"));
            let _ = write!(
                page,
                "<tr><td>{n}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(f["kind"].as_str().unwrap_or_default()),
                esc(f["target"].as_str().unwrap_or("-")),
                s(&f["planned_at_s"]),
                s(&f["started_s"]),
                s(&f["ended_s"]),
                f["happened"],
                esc(f["detail"].as_str().unwrap_or_default()),
            );
        }
    }
    page.push_str("</table><p>Times count from the start of the load on the harness's monotonic clock; <code>summary.json</code> has the wall time of that start and every figure here.</p></body></html>\n");
    page
}

/// Shades every fault that hit `lane`, from its start to its heal.
fn faults_on(
    svg: &mut String,
    input: &Input<'_>,
    lane: &str,
    y: f64,
    h: f64,
    x: &dyn Fn(u64) -> f64,
) {
    for record in input
        .history
        .faults
        .iter()
        .filter(|r| r.lane.as_deref() == Some(lane))
    {
        let from = x(record.start_us);
        let to = x(record.end_us.unwrap_or(record.start_us));
        let colour = color(record.kind);
        let happened = if record.happened {
            ""
        } else {
            " (did not happen)"
        };
        let _ = write!(
            svg,
            r#"<g><title>{name}{happened}: {detail}, {:.2}-{:.2} s</title><rect x="{from:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{colour}" opacity="0.18"/><line x1="{from:.1}" y1="{y:.1}" x2="{from:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}" fill="{colour}">{name}</text></g>"#,
            record.start_us as f64 / 1e6,
            record.end_us.unwrap_or(record.start_us) as f64 / 1e6,
            (to - from).max(2.0),
            y + h,
            from + 3.0,
            y + 10.0,
            name = record.kind.name(),
            detail = esc(&record.detail),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::history::FaultRecord;
    use super::*;

    fn config() -> Config {
        Config {
            seconds: 30,
            seed: 1,
            coordinator: Coordinator::Etcd,
            instances: 1,
            members: 3,
            lease_ttl: 3,
            think_ms: 40,
            free_identities: None,
            snowmint: "snowmint".into(),
            out: "out".into(),
        }
    }

    fn stale_leader(unconfirmed_renewals: Option<u64>) -> (Fault, FaultRecord) {
        let fault = Fault {
            at_ms: 0,
            kind: FaultKind::StaleLeader,
            target: Some(0),
            hold_ms: 2_000,
            back_ms: 0,
            forward_ms: 0,
            group: Vec::new(),
        };
        let record = FaultRecord {
            index: 0,
            kind: FaultKind::StaleLeader,
            lane: Some("i0".to_owned()),
            start_us: 0,
            end_us: Some(3_000_000),
            happened: true,
            detail: String::new(),
            unconfirmed_renewals,
        };
        (fault, record)
    }

    /// The violations of a run with `ids` IDs checked and one
    /// `stale_leader` fault whose target refused `unconfirmed` answers.
    fn violations_of(ids: u64, unconfirmed: Option<u64>) -> Vec<String> {
        let config = config();
        let (fault, record) = stale_leader(unconfirmed);
        let history = History {
            faults: vec![record],
            ..History::default()
        };
        let findings = Findings {
            ids,
            ..Findings::default()
        };
        let lanes = ["i0".to_owned(), "static".to_owned()];
        violations(&Input {
            config: &config,
            started_unix_ms: 0,
            history: &history,
            findings: &findings,
            schedule: &[fault],
            lanes: &lanes,
            interrupted: false,
        })
    }

    #[test]
    fn a_run_that_minted_nothing_or_saw_no_refused_renewal_fails() {
        assert_eq!(violations_of(1_000, Some(2)), Vec::<String>::new());
        assert_eq!(
            violations_of(0, Some(2)),
            ["no ID was minted: the checks had nothing to check"]
        );
        let refused_none = "stale_leader: 1 happened, none made its target refuse a \
                            keep-alive answer";
        for unconfirmed in [Some(0), None] {
            let found = violations_of(1_000, unconfirmed);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(found[0].starts_with(refused_none), "{found:?}");
        }
    }
}
