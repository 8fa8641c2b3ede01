//! Who runs which slices of a level that ranks split (by rows or by edges, `ranks.rs`), decided
//! while they run: every rank holds the same [`Deal`] and changes it only from what the ranks'
//! exchanges carry, so every rank reaches the same answer without a coordinator.
//!
//! The slices are dealt in turn as before (slice k to rank k mod K), but a rank may run only the
//! slices it was *granted*: at first half of its queue, then, at each exchange where its worker
//! is idle, half of what remains. A rank that has run its whole queue takes from the ungranted
//! tail of the rank that would end last as many slices as make both end together, where the
//! ranks report their times (split by edges), else half of the longest tail. Only ungranted
//! slices move, and a rank learns of a grant only at an exchange, so no slice runs twice and
//! none is lost, whatever each rank's worker did between two exchanges. Grants halve so that a rank asks for more only a few times
//! a level (an idle rank exchanges at once, and waits at most for the others' next exchange:
//! every 10 ms split by rows, by edges as often as the soonest end of a grant calls for), while
//! a slow rank's last slices stay movable until the others run out: the row weights that cut
//! the slices cannot foresee the early successes that end a row's sets, and with slices fixed
//! per rank a Gaussian level of p = 55,572 on two ranks left one rank idle for up to 4.6 s of a
//! 20 s level.
//!
//! [`Claims`] is the rank's side shared with its worker thread (a level split by rows: the set
//! kernels run on a worker while R's thread exchanges): the queue and grant the exchanges set,
//! what the worker has taken, and whether it is idle. Split by edges, the backend runs each batch
//! on R's thread itself, exchanging from the batch's watch.

use std::sync::{Condvar, Mutex};

use crate::error::{PcError, Result};

/// What one rank said at an exchange: how many slices of its queue it has taken, and whether its
/// worker is idle (everything taken has run, its keys posted); where it can tell, the
/// milliseconds until it runs out of granted slices and the milliseconds a slice took it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub claimed: usize,
    pub idle: bool,
    pub eta_ms: Option<u64>,
    pub slice_ms: Option<u64>,
}

/// The same on every rank: each rank's queue of slice indices, how many of them it may run, and
/// how many it had taken at the last exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deal {
    pub queues: Vec<Vec<usize>>,
    pub granted: Vec<usize>,
    claimed: Vec<usize>,
    /// Slices each rank took from another's queue.
    pub taken: Vec<usize>,
    moving: bool,
}

fn half(n: usize) -> usize {
    n.div_ceil(2)
}

/// How many of a busy rank's `left` ungranted slices an idle rank takes so that both end about
/// together: the busy one needs `eta` ms for its grant and `busy_ms` a slice, the idle one
/// `idle_ms` a slice. Halving the tail instead ran CMI-kNN's level 1 on two H200s 2.2 s past the
/// other rank (slices of 2.5 s, the fast rank taking two while the slow one still had a grant to
/// run); none moves where the idle rank would end later than the busy one.
fn balanced_take(eta: u64, left: usize, busy_ms: u64, idle_ms: u64) -> usize {
    let (left, busy, idle) = (left as u128, busy_ms as u128, idle_ms as u128);
    let total = eta as u128 + left * busy;
    // the later of the two ends, taking k; the best k is one of the two around total / (both)
    let end = |k: u128| (total - k * busy).max(k * idle);
    let k = (total / (busy + idle).max(1)).min(left);
    let k = if k < left && end(k + 1) < end(k) { k + 1 } else { k };
    k as usize
}

impl Deal {
    /// `slices` dealt in turn over `size` ranks; with `moving` false every rank is granted its
    /// whole queue at once and nothing moves (the static deal, for comparisons).
    pub fn new(slices: usize, size: usize, moving: bool) -> Self {
        let queues: Vec<Vec<usize>> = (0..size).map(|r| (r..slices).step_by(size.max(1)).collect()).collect();
        let granted = queues.iter().map(|q| if moving { half(q.len()) } else { q.len() }).collect();
        Deal { queues, granted, claimed: vec![0; size], taken: vec![0; size], moving }
    }

    /// Every rank idle with its whole queue taken: the level's slices have all run.
    pub fn done(&self, reports: &[Report]) -> bool {
        reports.iter().zip(&self.queues).all(|(r, q)| r.idle && r.claimed == q.len())
    }

    /// The exchange's reports applied: the idle ranks with nothing left take from the longest
    /// ungranted tails (in rank order), then every idle rank is granted half of what remains of
    /// its queue. Where the ranks report their times, a rank takes from the one that would end
    /// last, as many slices as make both end together ([`balanced_take`]); else half the tail.
    pub fn update(&mut self, reports: &[Report]) -> Result<()> {
        if reports.len() != self.queues.len() {
            return Err(PcError::Internal(format!("{} reports for a deal over {} ranks", reports.len(), self.queues.len())));
        }
        for (r, rep) in reports.iter().enumerate() {
            if rep.claimed > self.granted[r] || rep.claimed < self.claimed[r] {
                return Err(PcError::Internal(format!(
                    "rank {r} says it took {} slices of the level, with {} granted and {} taken before",
                    rep.claimed, self.granted[r], self.claimed[r]
                )));
            }
            self.claimed[r] = rep.claimed;
        }
        if self.moving {
            for i in 0..reports.len() {
                if !(reports[i].idle && self.claimed[i] == self.queues[i].len()) {
                    continue;
                }
                let left = |j: usize| self.queues[j].len() - self.granted[j];
                let ends = |j: usize| reports[j].eta_ms.zip(reports[j].slice_ms).map(|(e, s)| e as u128 + left(j) as u128 * s as u128);
                let timed = (0..reports.len()).all(|j| j == i || left(j) == 0 || ends(j).is_some()) && reports[i].slice_ms.is_some();
                let victims = (0..self.queues.len()).filter(|&j| j != i && left(j) > 0);
                let j = if timed { victims.max_by_key(|&j| (ends(j), std::cmp::Reverse(j))) } else { victims.max_by_key(|&j| (left(j), std::cmp::Reverse(j))) };
                let Some(j) = j else { continue };
                let take = match (timed, reports[j].eta_ms, reports[j].slice_ms, reports[i].slice_ms) {
                    (true, Some(eta), Some(sj), Some(si)) => balanced_take(eta, left(j), sj, si),
                    _ => half(left(j)),
                };
                if take == 0 {
                    continue;
                }
                let keep = self.queues[j].len() - take;
                let tail = self.queues[j].split_off(keep);
                self.taken[i] += tail.len();
                self.queues[i].extend(tail);
            }
        }
        for (r, rep) in reports.iter().enumerate() {
            if rep.idle && self.claimed[r] == self.granted[r] {
                self.granted[r] += half(self.queues[r].len() - self.granted[r]);
            }
        }
        Ok(())
    }
}

/// A rank's queue and grant as its worker sees them.
#[derive(Debug, Default)]
struct ClaimState {
    queue: Vec<usize>,
    granted: usize,
    claimed: usize,
    busy: bool,
    closed: bool,
    /// Seconds (the caller's clock) at which the worker last became idle.
    idle_at: f64,
}

/// The rank's side of its [`Deal`], shared between the exchanging thread and the worker.
#[derive(Debug, Default)]
pub struct Claims {
    state: Mutex<ClaimState>,
    more: Condvar,
}

impl Claims {
    pub fn new(queue: Vec<usize>, granted: usize) -> Self {
        Claims { state: Mutex::new(ClaimState { queue, granted, ..Default::default() }), more: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClaimState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker's next batch: every granted slice not yet taken, waiting for a grant while there
    /// is none; `None` once the exchanges closed the level. `now` stamps the moment it went idle,
    /// and `idle` is called when it finds nothing to take (to wake the exchanging thread).
    pub fn next_batch(&self, now: impl Fn() -> f64, idle: impl Fn()) -> Option<Vec<usize>> {
        let mut s = self.lock();
        s.busy = false;
        s.idle_at = now();
        if s.claimed == s.granted {
            idle();
        }
        loop {
            let end = s.granted.min(s.queue.len());
            if s.claimed < end {
                let batch = s.queue[s.claimed..end].to_vec();
                s.claimed = end;
                s.busy = true;
                return Some(batch);
            }
            if s.closed {
                return None;
            }
            s = self.more.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// What this rank reports at an exchange (read before its keys are collected, so that an idle
    /// rank's message holds all its keys).
    pub fn report(&self) -> Report {
        let s = self.lock();
        Report { claimed: s.claimed, idle: !s.busy && s.claimed == s.granted, ..Default::default() }
    }

    /// The deal's queue and grant for this rank after an exchange.
    pub fn set(&self, queue: &[usize], granted: usize) {
        let mut s = self.lock();
        s.queue.clear();
        s.queue.extend_from_slice(queue);
        s.granted = granted.max(s.claimed);
        drop(s);
        self.more.notify_all();
    }

    /// No more grants: the worker returns once idle.
    pub fn close(&self) {
        self.lock().closed = true;
        self.more.notify_all();
    }

    pub fn idle_at(&self) -> f64 {
        self.lock().idle_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // the deal as ranks of given speeds run it: every slice runs once, on one rank, and a fast
    // rank takes slices from a slow one
    fn simulate(slices: usize, size: usize, cost: impl Fn(usize, usize) -> u64, moving: bool) -> (Vec<Vec<usize>>, Vec<u64>, Deal) {
        simulate_timed(slices, size, cost, moving, false)
    }

    // `timed`: the ranks also report their grant's remaining time and their time a slice
    fn simulate_timed(slices: usize, size: usize, cost: impl Fn(usize, usize) -> u64, moving: bool, timed: bool) -> (Vec<Vec<usize>>, Vec<u64>, Deal) {
        let mut deal = Deal::new(slices, size, moving);
        let mut ran: Vec<Vec<usize>> = vec![Vec::new(); size];
        // per rank: the time its worker is busy until, what it took
        let mut busy_until = vec![0u64; size];
        let mut claimed = vec![0usize; size];
        let mut t = 0u64;
        loop {
            // between exchanges each idle worker takes its whole grant
            for r in 0..size {
                if busy_until[r] <= t && claimed[r] < deal.granted[r] {
                    let batch = deal.queues[r][claimed[r]..deal.granted[r]].to_vec();
                    claimed[r] = deal.granted[r];
                    busy_until[r] = t + batch.iter().map(|&k| cost(r, k)).sum::<u64>();
                    ran[r].extend(batch);
                }
            }
            t += 10;
            let reports: Vec<Report> = (0..size)
                .map(|r| {
                    let idle = busy_until[r] <= t && claimed[r] == deal.granted[r];
                    let slice_ms = (timed && !ran[r].is_empty()).then(|| ran[r].iter().map(|&k| cost(r, k)).sum::<u64>() / ran[r].len() as u64);
                    let eta_ms = slice_ms.map(|_| busy_until[r].saturating_sub(t));
                    Report { claimed: claimed[r], idle, eta_ms, slice_ms }
                })
                .collect();
            if deal.done(&reports) {
                return (ran, busy_until, deal);
            }
            deal.update(&reports).unwrap();
            assert!(t < 1_000_000, "the deal never ends");
        }
    }

    #[test]
    fn every_slice_runs_once_and_fast_ranks_take_from_slow_ones() {
        for (slices, size) in [(32usize, 2usize), (48, 3), (64, 4), (3, 4), (0, 2), (1, 1), (7, 2)] {
            // rank 0 three times slower than the others
            let cost = |r: usize, _k: usize| if r == 0 { 300 } else { 100 };
            let (ran, until, deal) = simulate(slices, size, cost, true);
            each_slice_ran_once_in_queue_order(&ran, &deal, slices);
            let (_, until_static, _) = simulate(slices, size, cost, false);
            let end = until.iter().max().copied().unwrap_or(0);
            let end_static = until_static.iter().max().copied().unwrap_or(0);
            assert!(end <= end_static, "{slices} slices over {size} ranks: {end} with moves, {end_static} without");
            if slices >= 32 {
                assert!(deal.taken.iter().sum::<usize>() > 0, "{slices} slices over {size} ranks: nothing moved");
                assert!((end as f64) < 0.8 * end_static as f64, "{slices} slices over {size} ranks: {end} with moves, {end_static} without");
            }
        }
    }

    fn each_slice_ran_once_in_queue_order(ran: &[Vec<usize>], deal: &Deal, slices: usize) {
        let mut all: Vec<usize> = ran.concat();
        all.sort_unstable();
        assert_eq!(all, (0..slices).collect::<Vec<_>>(), "{slices} slices over {} ranks", ran.len());
        for (r, q) in deal.queues.iter().enumerate() {
            assert_eq!(&ran[r], q, "rank {r} ran its final queue in order");
        }
    }

    // with the ranks' times a fast rank takes what makes both end together, no more: halving
    // the tail can leave the fast rank running a slice past the slow one's end
    #[test]
    fn timed_steals_end_the_ranks_together() {
        for (slices, size, slow) in [(32usize, 2usize, 130u64), (32, 2, 300), (48, 3, 200), (64, 4, 120), (7, 2, 150), (2, 2, 1000)] {
            let cost = |r: usize, _k: usize| if r == 0 { slow } else { 100 };
            let (ran, until, deal) = simulate_timed(slices, size, cost, true, true);
            each_slice_ran_once_in_queue_order(&ran, &deal, slices);
            let (_, until_half, _) = simulate(slices, size, cost, true);
            let end = until.iter().max().copied().unwrap_or(0);
            let end_half = until_half.iter().max().copied().unwrap_or(0);
            assert!(end <= end_half, "{slices} slices over {size} ranks, slow {slow}: {end} timed, {end_half} halving");
            // the ranks end within a slice of the slow rank (plus the exchanges' 10 ticks)
            let first = until.iter().min().copied().unwrap_or(0);
            assert!(end - first <= slow + 10, "{slices} slices over {size} ranks, slow {slow}: ends {until:?}");
        }
        assert_eq!(balanced_take(0, 0, 100, 100), 0);
        assert_eq!(balanced_take(50, 0, 100, 100), 0, "nothing ungranted");
        assert_eq!(balanced_take(150, 1, 100, 100), 1, "250 ms of work left: one slice each");
        assert_eq!(balanced_take(50, 1, 100, 100), 1, "150 ms left on the busy rank, 100 on the idle one");
        assert_eq!(balanced_take(50, 1, 100, 200), 0, "the idle rank would end later than the busy one");
        assert_eq!(balanced_take(80, 1, 120, 100), 1, "200 ms left on the busy rank, 100 on the idle one");
        assert_eq!(balanced_take(0, 10, 300, 100), 8, "three times faster: 8 of 10 (ends at 800 and 600 ms)");
    }

    #[test]
    fn the_static_deal_grants_everything_and_moves_nothing() {
        let (ran, _, deal) = simulate(32, 2, |r, _| if r == 0 { 500 } else { 1 }, false);
        assert_eq!(ran[0], (0..32).step_by(2).collect::<Vec<_>>());
        assert_eq!(deal.taken, vec![0, 0]);
    }

    #[test]
    fn reports_beyond_the_grant_are_refused() {
        let mut d = Deal::new(8, 2, true);
        assert_eq!(d.granted, vec![2, 2]);
        assert!(d.update(&[Report { claimed: 3, idle: false, ..Default::default() }, Report::default()]).is_err());
        let mut d = Deal::new(8, 2, true);
        d.update(&[Report { claimed: 2, idle: false, ..Default::default() }, Report { claimed: 0, idle: false, ..Default::default() }]).unwrap();
        assert_eq!(d.granted, vec![2, 2], "a busy rank gets no more");
        d.update(&[Report { claimed: 2, idle: true, ..Default::default() }, Report { claimed: 2, idle: true, ..Default::default() }]).unwrap();
        assert_eq!(d.granted, vec![3, 3], "an idle rank gets half of the rest");
        assert!(d.update(&[Report { claimed: 1, idle: false, ..Default::default() }, Report::default()]).is_err(), "a rank cannot take back slices");
    }

    #[test]
    fn claims_hand_out_grants_and_close() {
        let c = Claims::new(vec![4, 6, 8], 2);
        assert_eq!(c.report(), Report { claimed: 0, idle: false, ..Default::default() }, "granted slices not yet taken");
        assert_eq!(c.next_batch(|| 0.0, || ()), Some(vec![4, 6]));
        assert_eq!(c.report(), Report { claimed: 2, idle: false, ..Default::default() });
        c.set(&[4, 6, 8, 1], 4);
        assert_eq!(c.next_batch(|| 1.5, || ()), Some(vec![8, 1]));
        c.close();
        assert_eq!(c.next_batch(|| 2.5, || ()), None);
        assert_eq!(c.idle_at(), 2.5);
        assert_eq!(c.report(), Report { claimed: 4, idle: true, ..Default::default() });
        // a waiting worker wakes for a grant
        let c = Claims::new(vec![0, 1], 0);
        std::thread::scope(|s| {
            let h = s.spawn(|| c.next_batch(|| 0.0, || ()));
            std::thread::sleep(std::time::Duration::from_millis(20));
            c.set(&[0, 1], 2);
            assert_eq!(h.join().unwrap(), Some(vec![0, 1]));
        });
    }
}
