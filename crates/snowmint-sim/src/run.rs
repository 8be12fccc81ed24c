//! One schedule: a few holders running the real `LeasedGenerator` (session,
//! fence, holder, generator) against the simulated cluster under faults
//! drawn from one seed, with every invariant checked at each mint.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use snowmint::{Clock, Generator, Identity};
use snowmint_lease::{
    ClockSources, LeaseClock, LeaseConfig, LeasedGenerator, MintError, Pool, SuspendAwareClock,
};

use crate::world::{Shared, SimEtcd, SimMarks, World, lock, now_ms};

/// Unix ms at the start of every schedule (2023-11-14).
const WALL_START_MS: u64 = 1_700_000_000_000;

/// What one schedule found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub violations: Vec<String>,
    pub faults: BTreeMap<&'static str, u64>,
    pub ids: u64,
    pub log: Vec<String>,
}

/// The clocks one holder machine's lease clock is built on: virtual time,
/// whose monotonic clock stands still while the machine is suspended (the
/// production clock, [`SuspendAwareClock`], counts that time back in).
#[derive(Debug)]
struct SimSources {
    origin: tokio::time::Instant,
    wall: SimWall,
    sleep: Arc<Sleep>,
}

impl SimSources {
    fn elapsed_ns(&self) -> u64 {
        let elapsed = tokio::time::Instant::now().duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
    }
}

impl ClockSources for SimSources {
    fn monotonic(&self) -> Duration {
        let now = self.elapsed_ns();
        Duration::from_nanos(now - self.sleep.asleep_ns(now))
    }

    fn wall(&self) -> Duration {
        Duration::from_millis(self.wall.now_ms())
    }

    fn suspended(&self) -> Duration {
        Duration::from_nanos(self.sleep.asleep_ns(self.elapsed_ns()))
    }
}

/// One machine's suspends (virtual ns): the one under way or last, and the
/// time spent in those before it.
#[derive(Debug, Default)]
struct Sleep(std::sync::Mutex<SleepState>);

#[derive(Debug, Default, Clone, Copy)]
struct SleepState {
    since: u64,
    until: u64,
    before: u64,
}

impl Sleep {
    /// Time spent suspended up to `now`.
    fn asleep_ns(&self, now: u64) -> u64 {
        let s = *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s.before + now.clamp(s.since, s.until) - s.since
    }

    /// Suspends from `now` for `ns`, unless a suspend is under way.
    fn suspend(&self, now: u64, ns: u64) -> bool {
        let mut s = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now < s.until {
            return false;
        }
        *s = SleepState {
            since: now,
            until: now + ns,
            before: s.before + (s.until - s.since),
        };
        true
    }
}

/// One holder machine's wall clock: virtual time plus its steps.
#[derive(Debug, Clone)]
struct SimWall {
    origin: tokio::time::Instant,
    offset_ms: Arc<AtomicI64>,
}

impl Clock for SimWall {
    fn now_ms(&self) -> u64 {
        let base = WALL_START_MS + now_ms(self.origin);
        base.saturating_add_signed(self.offset_ms.load(Ordering::Relaxed))
    }

    fn sleep_until_ms(&self, _target_ms: u64, _max: Duration) -> Duration {
        // Nothing in the simulation waits: mints take the never-waiting path.
        Duration::ZERO
    }
}

/// A holder machine: its slot, clocks, and the generator running on it.
struct Machine {
    slot: usize,
    wall: SimWall,
    /// Its lease clock, which lives as long as the machine (a restart is a
    /// new process on the same machine, and the same kernel clocks).
    lease_clock: Arc<SuspendAwareClock<SimSources>>,
    leased: Option<Rc<LeasedGenerator>>,
    /// Bumped at each start: a restart is a new minter.
    incarnation: u64,
}

/// The checker's memory.
#[derive(Default)]
struct Truth {
    ids: HashSet<u64>,
    /// Per minter (slot, incarnation): the last ID it issued.
    last_of: BTreeMap<(usize, u64), u64>,
    /// Per identity: who minted as it last, when, and which minters it has
    /// passed from.
    by_identity: BTreeMap<u16, Issuer>,
    count: u64,
}

/// Which tenure (minter and lease) minted as one identity last, and when.
struct Issuer {
    at: u64,
    id: u64,
    tenure: Tenure,
    /// Tenures it has passed from: none of them may mint as it again.
    passed: BTreeSet<Tenure>,
}

/// One minter's (slot, incarnation) time under one lease.
type Tenure = (usize, u64, i64);

/// The knobs of one schedule, drawn from its seed.
#[derive(Debug, Clone, Copy)]
struct Shape {
    holders: usize,
    /// The longest lease TTL of the holders (s): the model's declared
    /// bound.
    ttl_s: u64,
    /// Each holder's own lease TTL (s), drawn apart: a hand-over's wait
    /// must cover the longest fence that may still be open.
    ttls: [u64; 4],
    length_ms: u64,
    /// Free identities of the pool beyond the holders (the rest is filled).
    spare: u16,
    /// The generators' reserve window, ms: the default, or (one schedule in
    /// four) longer than a suspend, so that a holder woken past its lease's
    /// end could issue under its mark without a write.
    window_ms: u64,
    /// Whether machines are suspended (the schedules with the long window).
    suspends: bool,
}

pub fn schedule(seed: u64) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(run(seed))
}

async fn run(seed: u64) -> Outcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let holders = rng.random_range(2..=4);
    // Every holder with one TTL, or (half the schedules) each with its own.
    let mut ttls = [[2, 3, 5, 10][rng.random_range(0..4)]; 4];
    if rng.random_bool(0.5) {
        for ttl in ttls.iter_mut().take(holders) {
            *ttl = [2, 3, 5, 10][rng.random_range(0..4)];
        }
    }
    let ttl_s = ttls[..holders].iter().copied().max().unwrap_or(10);
    // Decided by the seed alone, so the other schedules stay what they were.
    let suspends = seed % 4 == 1;
    let window_ms = if suspends {
        ttl_s * 4_000
    } else {
        snowmint::DEFAULT_RESERVE_WINDOW_MS
    };
    let shape = Shape {
        holders,
        ttl_s,
        ttls,
        // Faults for 20 to 45 s, then the quiet tail (below).
        length_ms: rng.random_range(20_000..=45_000) + quiet_ms(ttl_s * 1000, window_ms),
        spare: rng.random_range(1..=3),
        window_ms,
        suspends,
    };
    // One schedule in sixteen is the SQL coordinator model's with lossy
    // failovers (seed = 6 mod 16), one in sixteen a database's without
    // (seed = 14 mod 16), and one in thirty-two the Redis model's, with
    // lossy failovers, restarts that lose everything and evictions
    // (seed = 20 mod 32).
    let redis = seed % 32 == 20;
    let lossy = seed % 16 == 6 || redis;
    let origin = tokio::time::Instant::now();
    let world: Shared = Arc::new(std::sync::Mutex::new(World::new(rng.random(), origin)));
    let pool = Pool::new(Some(3));
    {
        let mut w = lock(&world);
        // One schedule in eight is a database coordinator's (decided by the
        // seed alone, so the other schedules stay what they were).
        w.single_primary = seed % 8 == 6 || redis;
        w.lossy_failovers = lossy;
        w.redis = redis;
        if redis {
            w.fault("redis_schedule");
        } else if w.single_primary {
            w.fault("database_schedule");
        }
        let free = shape.holders as u16 + shape.spare;
        for n in pool.ordinals().skip(usize::from(free)) {
            w.fill(n);
        }
        w.pool = pool.ordinals().take(usize::from(free)).collect();
        w.max_ttl_ms = shape.ttl_s * 1000;
        w.quiet_from = shape.length_ms - quiet_ms(shape.ttl_s * 1000, shape.window_ms);
    }
    let machines: Vec<Rc<RefCell<Machine>>> = (0..shape.holders)
        .map(|slot| {
            // With lossy failovers the marks of the commits lost are gone,
            // and what a lost holder issued is bounded by its wall clock:
            // the holders' clocks agree within 3 s there (the fence margin
            // plus the reserve window), and are not stepped.
            let skew = if lossy { 1_500 } else { 500 };
            let wall = SimWall {
                origin,
                offset_ms: Arc::new(AtomicI64::new(rng.random_range(-skew..=skew))),
            };
            let lease_clock = Arc::new(SuspendAwareClock::new(SimSources {
                origin,
                wall: wall.clone(),
                sleep: Arc::default(),
            }));
            Rc::new(RefCell::new(Machine {
                slot,
                wall,
                lease_clock,
                leased: None,
                incarnation: 0,
            }))
        })
        .collect();
    let truth = Rc::new(RefCell::new(Truth::default()));
    let start = |machine: &Rc<RefCell<Machine>>, rng: &mut ChaCha8Rng| {
        let mut m = machine.borrow_mut();
        m.incarnation += 1;
        let wall = m.wall.clone();
        let factory_wall = wall.clone();
        let lease_clock: Arc<dyn LeaseClock> = m.lease_clock.clone();
        let config = LeaseConfig::default()
            .lease_ttl(Duration::from_secs(shape.ttls[m.slot]))
            .datacenter(3)
            .holder(format!("slot {} #{}", m.slot, m.incarnation))
            .clock(lease_clock)
            .wall_clock(Arc::new(wall))
            .generator(Arc::new(move |identity: Identity, store| {
                Generator::builder_for(identity)
                    .clock(factory_wall.clone())
                    .reserve_window_ms(shape.window_ms)
                    .store(store)
                    // The simulation's mark I/O answers at once: no thread.
                    .inline_store(true)
                    .build()
            }));
        let coordinator = SimEtcd {
            world: Arc::clone(&world),
            slot: m.slot,
            incarnation: m.incarnation,
            member: rng.random_range(0..3),
        };
        let marks = Arc::new(SimMarks {
            world: Arc::clone(&world),
            slot: m.slot,
        });
        m.leased = Some(Rc::new(LeasedGenerator::simulated(
            config,
            coordinator,
            marks,
            rng.random(),
        )));
    };
    for machine in &machines {
        start(machine, &mut rng);
    }
    let ttl_ms = shape.ttl_s * 1000;
    let quiet_from = shape.length_ms - quiet_ms(ttl_ms, shape.window_ms);
    // The faults, until the last quarter.
    let faults = {
        let world = Arc::clone(&world);
        let machines = machines.clone();
        let mut rng = ChaCha8Rng::seed_from_u64(rng.random());
        let stop_within: Vec<Duration> = shape.ttls[..shape.holders]
            .iter()
            .map(|ttl_s| request_timeout(ttl_s * 1000) * 7)
            .collect();
        async move {
            loop {
                let wait = rng.random_range(200..=3_000);
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let now = lock(&world).now();
                if now >= quiet_from {
                    break;
                }
                let kind = rng.random_range(0..15);
                let slot = rng.random_range(0..machines.len());
                match kind {
                    0 | 1 => {
                        let m = rng.random_range(0..3);
                        let d = rng.random_range(300..=ttl_ms * 5 / 2);
                        let mut w = lock(&world);
                        w.pause_member(m, d);
                    }
                    2 => {
                        let d = rng.random_range(300..=ttl_ms * 2);
                        let mut w = lock(&world);
                        w.holders_paused.entry(slot).or_insert(now + d);
                        w.fault("holder_pause");
                    }
                    8 if shape.suspends => {
                        // The machine suspended: paused, and its monotonic
                        // clock stands still meanwhile (its wall clock and
                        // the coordinator's do not).
                        let d = rng.random_range(300..=ttl_ms * 3);
                        let sources = machines[slot].borrow().lease_clock.clone();
                        let mut w = lock(&world);
                        if !w.holders_paused.contains_key(&slot)
                            && sources
                                .sources()
                                .sleep
                                .suspend(sources.sources().elapsed_ns(), d * 1_000_000)
                        {
                            w.holders_paused.insert(slot, now + d);
                            w.fault("holder_suspend");
                        }
                    }
                    3 => {
                        // A crash: the session stops without a word; the
                        // machine comes back a moment later as a new minter.
                        let leased = machines[slot].borrow_mut().leased.take();
                        if let Some(leased) = leased {
                            if let Ok(leased) = Rc::try_unwrap(leased) {
                                leased.abandon();
                            }
                            let who = (slot, machines[slot].borrow().incarnation);
                            {
                                let mut w = lock(&world);
                                w.fences_closed(who);
                                w.fault("holder_crash");
                            }
                            let back = rng.random_range(0..=ttl_ms * 2);
                            tokio::time::sleep(Duration::from_millis(back)).await;
                            start(&machines[slot], &mut rng);
                        }
                    }
                    4 => {
                        let leased = machines[slot].borrow_mut().leased.take();
                        if let Some(leased) = leased {
                            let began = lock(&world).now();
                            leased.shutdown().await;
                            let took = lock(&world).now() - began;
                            let mut w = lock(&world);
                            w.fault("holder_graceful_restart");
                            let bound = stop_within[slot];
                            if took > u64::try_from(bound.as_millis()).unwrap_or(u64::MAX) {
                                w.violation(format!(
                                    "slot {slot}'s shutdown took {took} ms, past its bound {bound:?}"
                                ));
                            }
                            drop(w);
                            start(&machines[slot], &mut rng);
                        }
                    }
                    5 if !lossy => {
                        let step = rng.random_range(-5_000..=5_000);
                        machines[slot]
                            .borrow()
                            .wall
                            .offset_ms
                            .fetch_add(step, Ordering::Relaxed);
                        lock(&world).fault(if step < 0 {
                            "wall_clock_step_back"
                        } else {
                            "wall_clock_step_forward"
                        });
                    }
                    6 => {
                        let rate = 1.0 + rng.random_range(0..=15) as f64 / 100.0;
                        lock(&world).set_rate(rate);
                    }
                    7 => {
                        let step = rng.random_range(-(ttl_ms as i64)..=ttl_ms as i64 * 2);
                        lock(&world).step_clock(step);
                    }
                    12 => {
                        // The coordinator ends a lease early right after a
                        // renewal of it counted; its holder is cut off, and
                        // another is made to claim its identity (the case
                        // that shows a short hand-over wait).
                        lock(&world).arm_early_end();
                    }
                    14 => {
                        let d = rng.random_range(ttl_ms..=ttl_ms * 5 / 2);
                        lock(&world).quorum_loss(d);
                    }
                    13 if lossy => {
                        // A failover that loses the last commits: now, or
                        // right after a renewal of a holder it then cuts off;
                        // with Redis, also a restart that loses everything,
                        // or an eviction of one record.
                        let mut w = lock(&world);
                        // (The SQL model's draw as it was, so that its
                        // schedules stay what they were.)
                        let pick = if redis {
                            rng.random_range(0..4)
                        } else if rng.random_bool(0.5) {
                            0
                        } else {
                            1
                        };
                        match pick {
                            0 => w.lossy_failover(),
                            1 => w.arm_failover(),
                            2 => w.redis_restart(),
                            _ => w.redis_eviction(),
                        }
                    }
                    10 => {
                        let taken = lock(&world).intrude();
                        if let Some(n) = taken {
                            let d = rng.random_range(ttl_ms..=ttl_ms * 3);
                            tokio::time::sleep(Duration::from_millis(d)).await;
                            lock(&world).leave(n);
                        }
                    }
                    _ => {
                        let mut w = lock(&world);
                        w.net.lost = [0.0, 0.02, 0.1, 0.3][rng.random_range(0..4)];
                        w.net.duplicated = [0.0, 0.05, 0.2][rng.random_range(0..3)];
                        w.net.delay_max_ms = [5, 50, 300, 900][rng.random_range(0..4)];
                        w.fault("network_change");
                    }
                }
            }
            // Quiet: every fault healed.
            let mut w = lock(&world);
            w.net.lost = 0.0;
            w.net.duplicated = 0.0;
            w.net.delay_max_ms = 5;
            w.holders_paused.clear();
            w.holders_cut.clear();
        }
    };
    // The minting clients, one per machine.
    let clients = machines.iter().map(|machine| {
        let world = Arc::clone(&world);
        let truth = Rc::clone(&truth);
        let machine = Rc::clone(machine);
        let mut rng = ChaCha8Rng::seed_from_u64(rng.random());
        async move {
            loop {
                let wait = rng.random_range(2..=40);
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let (now, paused) = {
                    let w = lock(&world);
                    let now = w.now();
                    (
                        now,
                        w.holders_paused
                            .get(&machine.borrow().slot)
                            .is_some_and(|&u| u > now),
                    )
                };
                if now >= shape.length_ms {
                    break;
                }
                if paused {
                    continue;
                }
                let (leased, who) = {
                    let m = machine.borrow();
                    (m.leased.clone(), (m.slot, m.incarnation))
                };
                let Some(leased) = leased else { continue };
                mint_once(&world, &truth, &leased, who, rng.random_range(1..=8));
            }
        }
    });
    let clients = futures_join(clients.collect());
    tokio::join!(faults, clients);
    // Liveness: every machine holds an identity and may mint, once quiet.
    let mut outcome = Outcome::default();
    for machine in &machines {
        let m = machine.borrow();
        if let Some(leased) = &m.leased
            && let Err(e) = leased.ready()
        {
            lock(&world).violation(format!(
                "slot {} not ready {} ms after the faults stopped: {e}",
                m.slot,
                shape.length_ms - quiet_from
            ));
        }
    }
    for machine in &machines {
        let leased = machine.borrow_mut().leased.take();
        if let Some(leased) = leased {
            leased.shutdown().await;
        }
    }
    let w = lock(&world);
    outcome.violations = w.violations.clone();
    outcome.faults = w.faults.clone();
    outcome.ids = truth.borrow().count;
    outcome.log = vec![format!("{shape:?}")];
    outcome
}

/// How long before the end the faults stop: enough for every machine to
/// hold an identity again and issue. A member paused just before may stay
/// paused for 2.5 TTLs; then a lease to expire, the longest backoff
/// (12.5 s), a claim, and a hand-over wait of one TTL; and, with a reserve
/// window longer than the default, the clock catching up with a mark that
/// much further ahead.
fn quiet_ms(ttl_ms: u64, window_ms: u64) -> u64 {
    20_000 + 5 * ttl_ms + window_ms.saturating_sub(snowmint::DEFAULT_RESERVE_WINDOW_MS)
}

/// Runs futures side by side on this task.
async fn futures_join<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        futures.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if futures.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

/// The request timeout the session derives from a TTL (as `config.rs`).
fn request_timeout(ttl_ms: u64) -> Duration {
    let ttl = Duration::from_millis(ttl_ms);
    let window = ttl.saturating_sub(snowmint_lease::fence_margin(ttl));
    (window / 3)
        .max(Duration::from_millis(100))
        .min(Duration::from_secs(2))
}

/// One mint attempt of up to `n` IDs, never waiting, checked.
fn mint_once(
    world: &Shared,
    truth: &Rc<RefCell<Truth>>,
    leased: &LeasedGenerator,
    who: (usize, u64),
    n: usize,
) {
    let ready = leased.ready();
    let lease = leased.metrics().lease;
    let minted = leased.try_next_ids(n);
    let mut w = lock(world);
    let now = w.now();
    match (&ready, &minted) {
        (Ok(_), Err(MintError::NotHeld | MintError::Fenced)) => {
            w.violation(format!(
                "slot {} ready but its mint failed: {minted:?}",
                who.0
            ));
        }
        (Err(MintError::NotHeld | MintError::Fenced), Ok(_)) => {
            w.violation(format!("slot {} not ready ({ready:?}) but minted", who.0));
        }
        _ => {}
    }
    let range = match minted {
        Ok(range) => range,
        Err(MintError::Generate(snowmint::GenerateError::WouldBlock)) => {
            drop(w);
            // What the server's keeper does: write the mark, then retry later.
            if leased.renewal_due() {
                let _ = leased.renew_reservation();
            }
            return;
        }
        Err(_) => return,
    };
    if let Some(lease) = lease {
        // Issuing: its hand-over wait, if it had one, is over.
        w.waiting.remove(&lease);
        let identity = ((range.first().get() >> 12) & 0x3ff) as u16;
        w.issued.insert((lease, identity));
        if let Some((before, until)) = w.open_fence_before(identity, lease, now) {
            w.violation(format!(
                "identity {identity}: slot {} issued under lease {lease:x} at {now} ms while lease {before:x}, which issued under it before, may be fenced open until {until} ms",
                who.0
            ));
        }
        let end = w.legit_end.get(&lease).copied().unwrap_or(0);
        if now >= end {
            w.violation(format!(
                "slot {} issued under lease {lease:x} at {now} ms, at or after its legitimate end {end} ms",
                who.0
            ));
        }
    }
    if crate::world::trace_on() {
        w.trace(format_args!(
            "slot {} #{} minted {} as {} under {lease:x?}",
            who.0,
            who.1,
            range.len(),
            (range.first().get() >> 12) & 0x3ff
        ));
    }
    let mut t = truth.borrow_mut();
    for id in range {
        let id = id.get();
        t.count += 1;
        if !t.ids.insert(id) {
            w.violation(format!("ID {id} issued twice (slot {})", who.0));
        }
        if let Some(&last) = t.last_of.get(&who)
            && id <= last
        {
            w.violation(format!(
                "slot {} #{} issued {id} after {last}: not increasing",
                who.0, who.1
            ));
        }
        t.last_of.insert(who, id);
        let identity = ((id >> 12) & 0x3ff) as u16;
        let tenure = (who.0, who.1, lease.unwrap_or(-1));
        let Some(last) = t.by_identity.get_mut(&identity) else {
            t.by_identity.insert(
                identity,
                Issuer {
                    at: now,
                    id,
                    tenure,
                    passed: BTreeSet::new(),
                },
            );
            continue;
        };
        if last.tenure != tenure {
            if last.passed.contains(&tenure) {
                w.violation(format!(
                    "identity {identity}: tenure {tenure:?} issued again after {:?} took over",
                    last.tenure
                ));
            }
            if now <= last.at || id <= last.id {
                w.violation(format!(
                    "identity {identity}: {tenure:?} issued {id} at {now} ms while {:?} issued {} at {} ms: overlapping holders",
                    last.tenure, last.id, last.at
                ));
            }
            let previous = last.tenure;
            last.passed.insert(previous);
            last.tenure = tenure;
        } else if id <= last.id {
            w.violation(format!("identity {identity}: {id} after {}", last.id));
        }
        last.at = now;
        last.id = id;
    }
}
