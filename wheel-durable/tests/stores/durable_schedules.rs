//! Durable schedules on both stores, end to end: each period runs once
//! and never early (on three nodes too, with Redis), upserts are
//! idempotent and replace the next run, concurrent upserts make one chain,
//! catch-up after the nodes were down, pause and resume, delete, trigger,
//! and the overlap policies with a slow handler. Each test body takes the
//! store ([`Where`]) and is two tests, `::embedded` and `::redis` (the
//! latter passes without running where no `redis-server` starts, as the
//! other Redis tests do).

use crate::durable_common::eventually;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wheel_durable::schedule::{CatchUp, Overlap, Schedule, Spec, run_key};
use wheel_durable::{
    DurableTimers, DurableTimersBuilder, Fired, Listing, Outcome, TimerState, Upserted,
};
use wheel_testkit::{RedisServer, ServerOptions};

/// Where a test's schedules live.
enum Where {
    Embedded(tempfile::TempDir),
    Redis(RedisServer),
}

impl Where {
    fn builder(&self) -> DurableTimersBuilder {
        match self {
            Where::Embedded(dir) => DurableTimers::builder().embedded(dir.path().join("t")),
            Where::Redis(server) => DurableTimers::builder()
                .redis(&server.url())
                .namespace("sched"),
        }
    }

    fn client(&self) -> DurableTimers {
        self.builder().build().unwrap()
    }

    /// `n` clients: one shared handle on the embedded store (a directory
    /// has one owner), `n` of their own on Redis.
    fn clients(&self, n: usize) -> Vec<Arc<DurableTimers>> {
        match self {
            Where::Embedded(_) => {
                let shared = Arc::new(self.client());
                (0..n).map(|_| shared.clone()).collect()
            }
            Where::Redis(_) => (0..n).map(|_| Arc::new(self.client())).collect(),
        }
    }
}

/// A test `$name::embedded` and a test `$name::redis` (which passes
/// without running where no server starts), each running `$body`.
macro_rules! both {
    ($name:ident, $body:ident) => {
        mod $name {
            #[test]
            fn embedded() {
                super::$body(&super::Where::Embedded(tempfile::tempdir().unwrap()));
            }

            #[test]
            fn redis() {
                let options = super::ServerOptions::default();
                if let Some(server) = super::RedisServer::for_test(options) {
                    super::$body(&super::Where::Redis(server));
                }
            }
        }
    };
}

/// One run as the handler saw it: the schedule's id, the nominal time,
/// when it started and ended (machine clock), and whether it was triggered.
#[derive(Debug, Clone)]
struct Run {
    id: String,
    key: String,
    nominal: SystemTime,
    due: SystemTime,
    started: SystemTime,
    ended: SystemTime,
    triggered: bool,
}

#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<Run>>>);

impl Runs {
    /// A handler that records each run, taking `busy(id)` to do its work.
    fn handler(
        &self,
        busy: impl Fn(&str) -> Duration + Send + Sync + 'static,
    ) -> impl Fn(&Fired) -> Outcome + Send + Sync + 'static {
        let runs = self.0.clone();
        move |f: &Fired| {
            let started = SystemTime::now();
            let s = f.schedule.clone().expect("only schedules' runs here");
            std::thread::sleep(busy(&s.id));
            runs.lock().unwrap().push(Run {
                id: s.id,
                key: f.key.clone(),
                nominal: s.nominal,
                due: f.due,
                started,
                ended: SystemTime::now(),
                triggered: s.triggered,
            });
            Outcome::Done
        }
    }

    fn of(&self, id: &str) -> Vec<Run> {
        let mut r: Vec<Run> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.id == id)
            .cloned()
            .collect();
        r.sort_by_key(|r| r.nominal);
        r
    }

    fn wait(&self, id: &str, n: usize) -> Vec<Run> {
        eventually(&format!("{n} runs of {id}"), || self.of(id).len() >= n);
        self.of(id)
    }
}

fn every_second(catch_up: CatchUp, overlap: Overlap) -> Schedule {
    Schedule::builder(Spec::every(Duration::from_secs(1)).unwrap())
        .catch_up(catch_up)
        .overlap(overlap)
        .build()
        .unwrap()
}

fn node(at: &Where, runs: &Runs, busy: fn(&str) -> Duration) -> DurableTimers {
    at.builder()
        .workers(8)
        .handler(runs.handler(busy))
        .build()
        .unwrap()
}

fn quick(_: &str) -> Duration {
    Duration::ZERO
}

/// The pending timers whose key starts with `prefix`.
fn pending_with(timers: &DurableTimers, prefix: &str) -> Vec<String> {
    let page = timers.list(Listing::Pending, 1_000).unwrap();
    let claimed = timers.list(Listing::Claimed, 1_000).unwrap();
    page.timers
        .into_iter()
        .chain(claimed.timers)
        .map(|t| t.key)
        .filter(|k| k.starts_with(prefix))
        .collect()
}

/// The keys starting with `prefix` of pending and claimed timers that have
/// not started: a run already running when its schedule is paused goes on
/// to its end.
fn waiting_with(timers: &DurableTimers, prefix: &str) -> Vec<String> {
    let page = timers.list(Listing::Pending, 1_000).unwrap();
    let claimed = timers.list(Listing::Claimed, 1_000).unwrap();
    page.timers
        .into_iter()
        .chain(claimed.timers)
        .filter(|t| t.state != TimerState::Running)
        .map(|t| t.key)
        .filter(|k| k.starts_with(prefix))
        .collect()
}

both!(
    a_schedule_every_second_runs_each_period_once_never_early,
    a_schedule_every_second_runs_each_period_once_never_early_on
);

fn a_schedule_every_second_runs_each_period_once_never_early_on(at: &Where) {
    let runs = Runs::default();
    let timers = node(at, &runs, quick);
    let created = SystemTime::now();
    let s = every_second(CatchUp::Latest, Overlap::Skip);
    assert_eq!(
        timers.upsert_schedule("tick", &s, b"p").unwrap(),
        Upserted::Created
    );
    let got = runs.wait("tick", 3);
    // The first slot at or after the creation, then every second, each once.
    assert!(got[0].nominal >= created - Duration::from_millis(1));
    for (a, b) in got.iter().zip(&got[1..]) {
        assert_eq!(
            b.nominal.duration_since(a.nominal).unwrap(),
            Duration::from_secs(1)
        );
    }
    for r in &got {
        assert!(r.started >= r.due && r.due >= r.nominal, "{r:?} ran early");
        assert_eq!(r.key, run_key("tick", r.nominal).unwrap());
        assert!(!r.triggered);
    }
    let info = timers.schedule("tick").unwrap().unwrap();
    assert!(info.runs_created >= 3);
    assert!(info.next_nominal.unwrap() > got[2].nominal);
    timers.shutdown().unwrap();
}

both!(
    an_unchanged_upsert_changes_nothing_and_a_changed_one_replaces_the_next_run,
    an_unchanged_upsert_changes_nothing_and_a_changed_one_replaces_the_next_run_on
);

fn an_unchanged_upsert_changes_nothing_and_a_changed_one_replaces_the_next_run_on(at: &Where) {
    let timers = at.client();
    let hourly = Schedule::builder(Spec::every(Duration::from_secs(3_600)).unwrap())
        .build()
        .unwrap();
    assert_eq!(
        timers.upsert_schedule("job", &hourly, b"a").unwrap(),
        Upserted::Created
    );
    let first = timers.schedule("job").unwrap().unwrap();
    assert_eq!(
        timers.upsert_schedule("job", &hourly, b"a").unwrap(),
        Upserted::Unchanged
    );
    assert_eq!(timers.schedule("job").unwrap().unwrap(), first);
    let pending = pending_with(&timers, "sched:job:");
    assert_eq!(
        pending,
        [run_key("job", first.next_nominal.unwrap()).unwrap()]
    );
    // A new period: the old next run is gone, the new one pending.
    let two_hours = Schedule::builder(Spec::every(Duration::from_secs(7_200)).unwrap())
        .build()
        .unwrap();
    assert_eq!(
        timers.upsert_schedule("job", &two_hours, b"a").unwrap(),
        Upserted::Updated
    );
    let info = timers.schedule("job").unwrap().unwrap();
    assert_eq!(info.schedule, two_hours);
    let pending = pending_with(&timers, "sched:job:");
    assert_eq!(
        pending,
        [run_key("job", info.next_nominal.unwrap()).unwrap()]
    );
    // A new payload alone is a change too; the run carries it.
    assert_eq!(
        timers.upsert_schedule("job", &two_hours, b"b").unwrap(),
        Upserted::Updated
    );
    let next = timers.get(&pending[0]).unwrap().unwrap();
    assert_eq!(next.payload, b"b");
    // Bad ids are input errors; the stores' run keys cannot be added.
    let e = timers.upsert_schedule("", &hourly, b"").unwrap_err();
    assert!(e.is_input(), "{e}");
    let e = timers
        .add("sched:job:5", Duration::from_secs(1), b"")
        .unwrap_err();
    assert!(e.is_input(), "{e}");
    timers.shutdown().unwrap();
}

both!(
    eight_clients_upserting_one_id_make_one_schedule_and_one_chain,
    eight_clients_upserting_one_id_make_one_schedule_and_one_chain_on
);

fn eight_clients_upserting_one_id_make_one_schedule_and_one_chain_on(at: &Where) {
    let clients = at.clients(8);
    let hourly = Schedule::builder(Spec::every(Duration::from_secs(3_600)).unwrap())
        .build()
        .unwrap();
    for round in 0..2u8 {
        let answers: Vec<Upserted> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let (timers, s) = (clients[usize::from(i)].clone(), hourly.clone());
                    // The first round all the same; the second, each its own payload.
                    let payload = if round == 0 { vec![0] } else { vec![i + 1] };
                    scope.spawn(move || timers.upsert_schedule("one", &s, &payload).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        if round == 0 {
            assert_eq!(
                answers.iter().filter(|a| **a == Upserted::Created).count(),
                1
            );
            assert_eq!(
                answers
                    .iter()
                    .filter(|a| **a == Upserted::Unchanged)
                    .count(),
                7
            );
        }
        assert_eq!(clients[0].schedules(10).unwrap().schedules.len(), 1);
        assert_eq!(
            pending_with(&clients[0], "sched:one:").len(),
            1,
            "round {round}"
        );
    }
}

both!(
    after_the_nodes_were_down_each_catch_up_policy_makes_its_runs,
    after_the_nodes_were_down_each_catch_up_policy_makes_its_runs_on
);

/// The schedules of the outage and pause tests: one per catch-up policy,
/// side by side, so that one 10 s wait covers the three.
const POLICIES: [(&str, CatchUp); 3] = [
    ("skip", CatchUp::Skip),
    ("latest", CatchUp::Latest),
    (
        "all",
        CatchUp::All {
            window: Duration::from_secs(60),
        },
    ),
];

/// How long the nodes are down, or the schedules paused.
const OUTAGE: Duration = Duration::from_secs(10);

const SECOND: Duration = Duration::from_secs(1);

/// The number of whole periods from `a` to `b`.
fn periods(a: SystemTime, b: SystemTime) -> u64 {
    let d = b.duration_since(a).unwrap();
    assert_eq!(d.subsec_nanos(), 0, "{a:?} and {b:?} are slots");
    d.as_secs()
}

/// The schedules of [`POLICIES`] (every second, overlap `Allow`) run once,
/// then the node stops for [`OUTAGE`] and a new one starts. Returns, per
/// schedule, the pending run's nominal time while the nodes were down;
/// the restart time; the new node.
fn down_and_up(at: &Where, runs: &Runs) -> (Vec<SystemTime>, SystemTime, DurableTimers) {
    let timers = node(at, runs, quick);
    for (id, c) in POLICIES {
        timers
            .upsert_schedule(id, &every_second(c, Overlap::Allow), b"")
            .unwrap();
    }
    for (id, _) in POLICIES {
        runs.wait(id, 1);
    }
    timers.shutdown().unwrap();
    drop(timers);
    // Read while every node is down: nothing moves the chains.
    let client = at.client();
    let pending = POLICIES
        .iter()
        .map(|(id, _)| {
            let next = client.schedule(id).unwrap().unwrap().next_nominal.unwrap();
            // The chain's pending run is the slot after the last that ran.
            assert_eq!(next, runs.of(id).last().unwrap().nominal + SECOND, "{id}");
            next
        })
        .collect();
    client.shutdown().unwrap();
    drop(client);
    std::thread::sleep(OUTAGE);
    let reopened = SystemTime::now();
    (pending, reopened, node(at, runs, quick))
}

/// The documented runs of each policy after every node was down (the
/// example of the "Catch-up" section, at 10 s): with `P` the pending run,
/// `S` the restart, `Skip` runs nothing before `S` and counts each slot
/// from `P` to its first run as missed; `Latest` runs the latest slot at
/// the restart and counts the ones before it from `P`; `All` runs every
/// slot from `P` on, all at the restart, and misses none. Then each goes
/// on every second, each slot once.
fn after_the_nodes_were_down_each_catch_up_policy_makes_its_runs_on(at: &Where) {
    let runs = Runs::default();
    let (pending, reopened, timers) = down_and_up(at, &runs);
    let after = |i: usize, n: usize| -> Vec<Run> {
        let id = POLICIES[i].0;
        let before = runs
            .of(id)
            .iter()
            .filter(|r| r.nominal < pending[i])
            .count();
        runs.wait(id, before + n)
            .into_iter()
            .filter(|r| r.nominal >= pending[i])
            .collect()
    };
    let missed = |id: &str| timers.schedule(id).unwrap().unwrap().skipped.missed;
    let consecutive = |r: &[Run]| {
        r.iter()
            .zip(&r[1..])
            .all(|(a, b)| b.nominal == a.nominal + SECOND)
    };
    let skip = after(0, 2);
    assert!(skip[0].nominal >= reopened, "{skip:?}");
    assert!(consecutive(&skip), "{skip:?}");
    assert_eq!(missed("skip"), periods(pending[0], skip[0].nominal));
    let latest = after(1, 2);
    // The latest slot at the restart: the one before it had passed too.
    assert!(latest[0].nominal + SECOND >= reopened - Duration::from_millis(1));
    assert!(latest[0].started >= reopened, "{latest:?}");
    assert!(consecutive(&latest), "{latest:?}");
    assert_eq!(missed("latest"), periods(pending[1], latest[0].nominal));
    // Every slot of the outage (ten or more): the pending run, then the
    // missed ones, created at the restart (due at their slots, so at once).
    let all = after(2, 12);
    assert_eq!(all[0].nominal, pending[2], "{all:?}");
    assert!(consecutive(&all), "{all:?}");
    let caught_up: Vec<&Run> = all[1..].iter().filter(|r| r.nominal < reopened).collect();
    assert!(caught_up.len() >= 8, "{caught_up:?}");
    assert!(
        caught_up.iter().all(|r| r.started >= reopened),
        "{caught_up:?}"
    );
    assert_eq!(missed("all"), 0);
    for (id, _) in POLICIES {
        let nominals: BTreeSet<SystemTime> = runs.of(id).iter().map(|r| r.nominal).collect();
        assert_eq!(nominals.len(), runs.of(id).len(), "{id}: a slot ran twice");
        assert!(
            runs.of(id).iter().all(|r| r.started >= r.due),
            "{id} ran early"
        );
    }
    timers.shutdown().unwrap();
}

both!(
    a_paused_schedule_runs_nothing_and_resumes_from_the_resume_time,
    a_paused_schedule_runs_nothing_and_resumes_from_the_resume_time_on
);

/// Paused for [`OUTAGE`] with a node running, one schedule per catch-up
/// policy: whatever the policy, nothing runs while paused, and the slots
/// of the pause, from the cancelled pending run to the first slot at or
/// after the resume, are counted as paused, never caught up.
fn a_paused_schedule_runs_nothing_and_resumes_from_the_resume_time_on(at: &Where) {
    let runs = Runs::default();
    let timers = node(at, &runs, quick);
    for (id, c) in POLICIES {
        timers
            .upsert_schedule(id, &every_second(c, Overlap::Skip), b"")
            .unwrap();
    }
    for (id, _) in POLICIES {
        runs.wait(id, 1);
        assert!(timers.pause_schedule(id).unwrap());
        assert!(!timers.pause_schedule(id).unwrap());
        let info = timers.schedule(id).unwrap().unwrap();
        assert!(info.paused && info.next_nominal.is_none());
        assert!(waiting_with(&timers, &format!("sched:{id}:")).is_empty());
    }
    let paused_at = SystemTime::now();
    std::thread::sleep(OUTAGE);
    let mut resumed = Vec::new();
    for (id, _) in POLICIES {
        let before = SystemTime::now();
        assert!(timers.resume_schedule(id).unwrap());
        resumed.push((before, SystemTime::now()));
        assert!(!timers.resume_schedule(id).unwrap());
    }
    for ((id, _), (resumed, answered)) in POLICIES.into_iter().zip(resumed) {
        let n = runs.of(id).len();
        let got = runs.wait(id, n + 2);
        // One gap: from the last run before the pause to the first after.
        let gaps: Vec<(&Run, &Run)> = got
            .iter()
            .zip(&got[1..])
            .filter(|(a, b)| b.nominal != a.nominal + SECOND)
            .collect();
        assert_eq!(gaps.len(), 1, "{id}: {got:?}");
        let (last, first) = gaps[0];
        assert!(last.started < paused_at, "{id}: {last:?}");
        assert!(
            first.nominal >= resumed && first.started >= resumed,
            "{id}: {first:?}"
        );
        // The first slot at or after the store's clock during the resume.
        assert!(first.nominal < answered + SECOND, "{id}: {first:?}");
        let info = timers.schedule(id).unwrap().unwrap();
        let paused_slots = periods(last.nominal, first.nominal) - 1;
        assert!(paused_slots >= 9, "{id}: {paused_slots}");
        assert_eq!(info.skipped.paused, paused_slots, "{id}");
        assert_eq!(info.skipped.missed, 0, "{id}");
    }
    timers.shutdown().unwrap();
}

both!(
    delete_cancels_the_pending_run_and_trigger_runs_once_beside_the_chain,
    delete_cancels_the_pending_run_and_trigger_runs_once_beside_the_chain_on
);

fn delete_cancels_the_pending_run_and_trigger_runs_once_beside_the_chain_on(at: &Where) {
    let runs = Runs::default();
    let timers = node(at, &runs, quick);
    let hourly = Schedule::builder(Spec::every(Duration::from_secs(3_600)).unwrap())
        .build()
        .unwrap();
    timers.upsert_schedule("h", &hourly, b"x").unwrap();
    let before = timers.schedule("h").unwrap().unwrap();
    let key = timers.trigger_schedule("h").unwrap().unwrap();
    let got = runs.wait("h", 1);
    assert!(got[0].triggered && got[0].key == key);
    // A schedule's run counts among the node's schedule runs, as well as
    // among all its runs.
    let stats = timers.stats();
    assert_eq!((stats.schedule_runs, stats.fired), (1, 1));
    // Finished, the run stays the schedule's last run; its timer is gone.
    eventually("the triggered run to finish", || {
        timers.get(&key).unwrap().is_none()
    });
    let last = timers.schedule("h").unwrap().unwrap();
    assert_eq!(last.last_key.as_deref(), Some(key.as_str()));
    assert_eq!(last.last_started, Some(got[0].nominal));
    let after = timers.schedule("h").unwrap().unwrap();
    assert_eq!(
        (after.next_nominal, after.runs_created),
        (before.next_nominal, before.runs_created)
    );
    assert_eq!(timers.trigger_schedule("nobody").unwrap(), None);
    assert!(timers.delete_schedule("h").unwrap());
    assert!(!timers.delete_schedule("h").unwrap());
    assert_eq!(timers.schedule("h").unwrap(), None);
    assert!(pending_with(&timers, "sched:h:").is_empty());
    timers.shutdown().unwrap();
}

both!(
    a_chain_whose_pending_run_was_cancelled_is_planned_again,
    a_chain_whose_pending_run_was_cancelled_is_planned_again_on
);

/// The recovery step: a caller cancels the pending run's timer, a node
/// gives the chain its next run again.
fn a_chain_whose_pending_run_was_cancelled_is_planned_again_on(at: &Where) {
    let runs = Runs::default();
    let timers = node(at, &runs, quick);
    let s = Schedule::builder(Spec::every(Duration::from_secs(3_600)).unwrap())
        .build()
        .unwrap();
    timers.upsert_schedule("r", &s, b"").unwrap();
    let next = timers.schedule("r").unwrap().unwrap().next_nominal.unwrap();
    assert!(timers.cancel(&run_key("r", next).unwrap()).unwrap());
    assert_eq!(timers.schedule("r").unwrap().unwrap().next_nominal, None);
    eventually("the chain to be planned again", || {
        timers
            .schedule("r")
            .unwrap()
            .unwrap()
            .next_nominal
            .is_some()
    });
    let info = timers.schedule("r").unwrap().unwrap();
    assert_eq!(info.next_nominal, Some(next + Duration::from_secs(3_600)));
    assert_eq!(pending_with(&timers, "sched:r:").len(), 1);
    timers.shutdown().unwrap();
}

/// Each schedule's handler takes 2.5 s, its period 1 s.
fn slow(_: &str) -> Duration {
    Duration::from_millis(2_500)
}

both!(
    overlap_policies_with_a_slow_handler,
    overlap_policies_with_a_slow_handler_on
);

fn overlap_policies_with_a_slow_handler_on(at: &Where) {
    let runs = Runs::default();
    let timers = node(at, &runs, slow);
    for (id, o) in [
        ("skip", Overlap::Skip),
        ("buffer", Overlap::BufferOne),
        ("allow", Overlap::Allow),
    ] {
        timers
            .upsert_schedule(id, &every_second(CatchUp::Latest, o), b"")
            .unwrap();
    }
    let overlapping = |r: &[Run]| r.iter().zip(&r[1..]).any(|(a, b)| b.started < a.ended);
    // Allow: a run starts every second while earlier ones still run.
    let allow = runs.wait("allow", 3);
    assert!(overlapping(&allow), "{allow:?}");
    // Skip: never two at once; the slots in between are dropped, counted.
    let skip = runs.wait("skip", 2);
    assert!(!overlapping(&skip), "{skip:?}");
    assert!(skip[1].nominal.duration_since(skip[0].nominal).unwrap() >= Duration::from_secs(2));
    assert!(timers.schedule("skip").unwrap().unwrap().skipped.overlap >= 1);
    // BufferOne: the next slot waits and starts when the run ends.
    let buffer = runs.wait("buffer", 2);
    assert!(!overlapping(&buffer), "{buffer:?}");
    assert_eq!(
        buffer[1].nominal,
        buffer[0].nominal + Duration::from_secs(1)
    );
    assert!(buffer[1].started >= buffer[0].ended);
    timers.shutdown().unwrap();
}

/// Three nodes on one Redis namespace, a schedule every second upserted by
/// each: each slot runs once, on whichever node, never early.
#[test]
fn three_redis_nodes_run_each_slot_of_one_schedule_once() {
    let Some(server) = RedisServer::for_test(ServerOptions::default()) else {
        return;
    };
    let at = Where::Redis(server);
    let runs = Runs::default();
    let nodes: Vec<DurableTimers> = (0..3).map(|_| node(&at, &runs, quick)).collect();
    let s = every_second(CatchUp::Latest, Overlap::Skip);
    for n in &nodes {
        n.upsert_schedule("shared", &s, b"").unwrap();
    }
    let got = runs.wait("shared", 4);
    for (a, b) in got.iter().zip(&got[1..]) {
        assert_eq!(b.nominal, a.nominal + Duration::from_secs(1), "{got:?}");
    }
    assert!(got.iter().all(|r| r.started >= r.due), "{got:?}");
    for n in nodes {
        n.shutdown().unwrap();
    }
}
