//! The log of every ID a scenario's instances issued, and its check.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowmint::SnowflakeId;
use snowmint_testkit::chaos::checker::{Recorder, Rules};

use super::wait_until;

/// One successful mint: who, when it started and ended, what it issued.
#[derive(Debug, Clone)]
pub struct Batch {
    pub instance: String,
    pub started: Instant,
    pub ended: Instant,
    pub ids: Vec<SnowflakeId>,
}

/// Every batch issued by every instance of one scenario.
pub type Log = Arc<Mutex<Vec<Batch>>>;

/// The merged log checked by the chaos harness's checker
/// (`snowmint_testkit::chaos::checker`), the one checker of mint logs: no
/// duplicate; each instance's IDs strictly increase, in real time, within
/// one identity and across every identity it re-claimed (each instance is
/// one `LeasedGenerator`, never restarted: guarantee 2); two instances that
/// held the same identity did so one after the other (no instance here is
/// handed an identity back), in time (the later one's first mint ended
/// after the earlier one's last mint started) and in ID space (every ID of
/// the later is greater); and every one of `instances` minted (an instance
/// that issued nothing would pass every other rule unseen). A batch's
/// times are taken to the microsecond: an instance's batches are 2 ms
/// apart, so one's order is never lost. Returns the number of IDs.
pub fn check_log(log: &Log, instances: &[&str]) -> usize {
    let log = log.lock().unwrap();
    let Some(epoch) = log.iter().map(|b| b.started).min() else {
        panic!("nothing minted; expected {instances:?} to mint");
    };
    let mut checked = Recorder::since(epoch);
    for name in instances {
        checked.instance(name);
    }
    for b in log.iter() {
        checked.record(
            &b.instance,
            b.started,
            b.ended,
            b.ids.iter().map(|id| id.get()),
        );
    }
    let rules = Rules {
        every_instance_mints: instances.len(),
        one_minter_each: true,
        one_tenure_each: true,
    };
    let ids = checked
        .verdict(&rules)
        .unwrap_or_else(|why| panic!("{why}"));
    usize::try_from(ids).unwrap()
}

/// `check_log` fails a log that breaks one of its rules, naming the rule
/// and the instances: what the tests above rely on when they pass.
#[test]
fn the_log_check_fails_what_breaks_its_rules() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    // An ID of worker `worker` of datacenter 0 at millisecond `ms` after the epoch.
    let id = |ms: u64, worker: u64| SnowflakeId::new((ms << 22) | (worker << 12)).unwrap();
    let batch = |instance: &str, from: u64, to: u64, ids: Vec<SnowflakeId>| Batch {
        instance: instance.to_owned(),
        started: at(from),
        ended: at(to),
        ids,
    };
    let failure = |batches: Vec<Batch>, instances: &[&str]| -> String {
        let log: Log = Arc::new(Mutex::new(batches));
        let instances: Vec<String> = instances.iter().map(|s| (*s).to_owned()).collect();
        let caught = std::panic::catch_unwind(move || {
            let names: Vec<&str> = instances.iter().map(String::as_str).collect();
            check_log(&log, &names)
        });
        match caught {
            Ok(n) => panic!("check_log passed {n} IDs"),
            Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
        }
    };
    let clean = || {
        vec![
            batch("a", 0, 1, vec![id(100, 0), id(101, 0)]),
            batch("b", 0, 1, vec![id(100, 1)]),
            batch("a", 3, 4, vec![id(102, 0)]),
            // b takes a's identity over above it; a re-claims another.
            batch("b", 10, 11, vec![id(200, 0)]),
            batch("a", 10, 11, vec![id(201, 2)]),
        ]
    };
    let log: Log = Arc::new(Mutex::new(clean()));
    assert_eq!(check_log(&log, &["a", "b"]), 6);

    let why = failure(clean(), &["a", "b", "c"]);
    assert!(
        why.contains("silent: instance 2") && why.contains("2 = c"),
        "{why}"
    );
    let mut twice = clean();
    twice.push(batch("c", 20, 21, vec![id(100, 1)]));
    let why = failure(twice, &["a", "b", "c"]);
    assert!(why.contains("duplicate"), "{why}");
    let mut back = clean();
    back.push(batch("a", 20, 21, vec![id(150, 3)]));
    let why = failure(back, &["a", "b"]);
    assert!(why.contains("went back across a re-claim"), "{why}");
    let mut beside = clean();
    beside.push(batch("b", 1, 2, vec![id(150, 0)]));
    let why = failure(beside, &["a", "b"]);
    assert!(why.contains("tenures overlap"), "{why}");
}

/// Waits until `instance` has minted a batch that started at or after
/// `since` (it minted after a fault, a recovery or a take-over).
pub async fn wait_minted(log: &Log, instance: &str, since: Instant) {
    let limit = Duration::from_secs(20);
    wait_until(&format!("{instance} mints"), limit, || {
        log.lock()
            .unwrap()
            .iter()
            .any(|b| b.instance == instance && b.started >= since)
    })
    .await;
}

/// The IDs `instance` issued as (datacenter, worker), in order.
pub fn issued_as(log: &Log, instance: &str, identity: (u8, u8)) -> Vec<SnowflakeId> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|b| b.instance == instance)
        .flat_map(|b| b.ids.iter().copied())
        .filter(|id| (id.datacenter(), id.worker()) == identity)
        .collect()
}

pub fn batches_of(log: &Log, instance: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|b| b.instance == instance)
        .count()
}
