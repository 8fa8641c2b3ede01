//! The level loop on a thread of its own while R's thread makes the result's R objects beside
//! it. R's allocator may only run on R's thread, and pcalg's sepset list is p lists of p cells
//! (1643 lists, 21.6 MB at p = 1643): made after the search, their allocation and the collection
//! of R's heap it sets off about every other call (8-12 ms on the GPU machine) came on top of a
//! search of about 12 ms. Made during it, they cost nothing where they take less time.
//!
//! The loop's watch calls come to R's thread as messages, in order: its level lines and progress
//! bar are R's (`RWatch`). Between messages R's thread allocates the rows a few at a time, then
//! waits, answering Ctrl-C: a `false` from the watch sets the flag the loop's `keep_going` reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use extendr_api::prelude::*;
use extendr_ffi::{Rf_allocVector, SET_VECTOR_ELT, SEXP, SEXPTYPE};
use pc_core::{Backend, PcError, SkeletonParams, SkeletonResult, Watch};

use crate::convert::CoreResult;

/// Rows allocated per step: a step takes well under a millisecond, so the loop's messages and
/// Ctrl-C wait at most that long.
const ROWS_PER_STEP: usize = 32;

/// pcalg's sepset list for p variables, its p rows of p `NULL` cells allocated a step at a time,
/// after the values its level-0 and level-1 cells share (`k` for each variable k, then
/// `integer(0)`): `sepsets_to_r` fills it in once the sepsets are known. R gets `list(rows,
/// shared values)`.
pub struct SepsetRows {
    p: usize,
    made: Option<Robj>,
    rows: usize,
}

impl SepsetRows {
    pub fn new(p: usize) -> Self {
        SepsetRows { p, made: None, rows: 0 }
    }

    /// Makes the shared values and the outer list, or the next rows; true once every row is
    /// made. An allocation R refuses is an error here, not a jump out of Rust.
    pub fn step(&mut self) -> CoreResult<bool> {
        use extendr_ffi::{MARK_NOT_MUTABLE, INTEGER, VECTOR_ELT};
        let p = self.p as isize;
        let refused = |_| crate::convert::sepset_memory(self.p);
        match &self.made {
            None => {
                // SAFETY: `m` is stored in `made` (protected) before anything else allocates;
                // every later object goes into `m` (or into a list `m` holds) right after its
                // allocation; all on R's thread
                let m = extendr_api::catch_r_error(|| unsafe { Rf_allocVector(SEXPTYPE::VECSXP, 2) }).map_err(refused)?;
                self.made = Some(unsafe { Robj::from_sexp(m) });
                let m = m as usize;
                extendr_api::catch_r_error(move || unsafe {
                    let m = m as SEXP;
                    SET_VECTOR_ELT(m, 1, Rf_allocVector(SEXPTYPE::VECSXP, p + 1));
                    let shared = VECTOR_ELT(m, 1);
                    for k in 0..p {
                        let v = Rf_allocVector(SEXPTYPE::INTSXP, 1);
                        SET_VECTOR_ELT(shared, k, v);
                        *INTEGER(v) = k as i32 + 1;
                        MARK_NOT_MUTABLE(v);
                    }
                    let empty = Rf_allocVector(SEXPTYPE::INTSXP, 0);
                    SET_VECTOR_ELT(shared, p, empty);
                    MARK_NOT_MUTABLE(empty);
                    SET_VECTOR_ELT(m, 0, Rf_allocVector(SEXPTYPE::VECSXP, p));
                    m
                })
                .map_err(refused)?;
                Ok(self.p == 0)
            }
            Some(m) => {
                // SAFETY: `m` is protected by `made`, and its first element is the outer list
                let o = unsafe { VECTOR_ELT(m.get(), 0) } as usize;
                let (from, to) = (self.rows as isize, (self.rows + ROWS_PER_STEP).min(self.p) as isize);
                // SAFETY: each row goes into the protected outer list right after its allocation
                extendr_api::catch_r_error(move || unsafe {
                    for x in from..to {
                        SET_VECTOR_ELT(o as SEXP, x, Rf_allocVector(SEXPTYPE::VECSXP, p));
                    }
                    o as SEXP
                })
                .map_err(refused)?;
                self.rows = to as usize;
                Ok(self.rows == self.p)
            }
        }
    }

    /// `list(rows, shared values)`, once every row is made.
    pub fn into_list(self) -> Option<Robj> {
        if self.made.is_some() && self.rows == self.p {
            self.made
        } else {
            None
        }
    }
}

/// What the loop's thread tells R's.
enum Event {
    LevelStart(usize, usize, u64),
    LevelEnd(usize, u64, usize, f64),
    Tick(u64, u64),
}

/// The loop's watch: messages to R's thread, and the stop flag R's thread sets.
struct Relay<'a> {
    tx: mpsc::Sender<Event>,
    stop: &'a AtomicBool,
}

impl Watch for Relay<'_> {
    fn level_start(&mut self, level: usize, edges: usize, planned: u64) {
        let _ = self.tx.send(Event::LevelStart(level, edges, planned));
    }
    fn level_end(&mut self, level: usize, tests: u64, removed: usize, seconds: f64) {
        let _ = self.tx.send(Event::LevelEnd(level, tests, removed, seconds));
    }
    fn tick(&mut self, done: u64, total: u64) -> bool {
        let _ = self.tx.send(Event::Tick(done, total));
        !self.stop.load(Ordering::Relaxed)
    }
    fn keep_going(&mut self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
}

/// `pc_core::run_skeleton_into` on a scoped thread while this (R's) thread makes `rows` and
/// passes the loop's watch calls to `watch` (see [`beside`]).
pub fn search_beside(params: &SkeletonParams, backend: &mut (dyn Backend + Send), watch: &mut dyn Watch, pmax: &mut [f64], rows: &mut SepsetRows) -> CoreResult<SkeletonResult> {
    beside(watch, rows, |relay| pc_core::run_skeleton_into(params, backend, relay, pmax))
}

/// `work` on a scoped thread, with a watch that relays to `watch`, while this (R's) thread makes
/// `rows` and passes the relayed calls on; once the work has succeeded, the rows left are made
/// after it. An allocation R refuses stops the work and is the error.
pub fn beside<T: Send>(watch: &mut dyn Watch, rows: &mut SepsetRows, work: impl FnOnce(&mut dyn Watch) -> CoreResult<T> + Send) -> CoreResult<T> {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    let stop_ref = &stop;
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let mut relay = Relay { tx, stop: stop_ref };
            work(&mut relay)
            // `relay` (the sender) drops here: R's thread sees the work end
        });
        let pass = |ev: Event, watch: &mut dyn Watch| match ev {
            Event::LevelStart(l, e, t) => watch.level_start(l, e, t),
            Event::LevelEnd(l, t, r, s) => watch.level_end(l, t, r, s),
            Event::Tick(d, t) => {
                if !watch.tick(d, t) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        };
        let (mut rows_done, mut failed) = (false, None);
        loop {
            // the loop's messages first, in order
            let mut ended = false;
            loop {
                match rx.try_recv() {
                    Ok(ev) => pass(ev, watch),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        ended = true;
                        break;
                    }
                }
            }
            if ended {
                break;
            }
            if !rows_done {
                match rows.step() {
                    Ok(done) => rows_done = done,
                    Err(e) => {
                        failed = Some(e);
                        rows_done = true;
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                if !watch.keep_going() {
                    stop.store(true, Ordering::Relaxed);
                }
                continue;
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(ev) => pass(ev, watch),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !watch.keep_going() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let res = worker.join().map_err(|e| PcError::Internal(pc_core::backend::panic_message(&*e)))?;
        // the rows R did not make while the work ran (none after a failure or Ctrl-C: a CPU rerun
        // under "auto" goes on where these stopped)
        while failed.is_none() && !rows_done && res.is_ok() {
            match rows.step() {
                Ok(done) => rows_done = done,
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => res,
        }
    })
}
