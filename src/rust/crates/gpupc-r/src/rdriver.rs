//! An R-function `indepTest`, called by R's own evaluator, never from Rust.
//!
//! pcalg calls the user's test from R code, so its warnings and messages reach the caller's
//! calling handlers (`suppressWarnings()`, `withCallingHandlers()`), and its errors, interrupts
//! and exiting handlers (`tryCatch()`) unwind R's stack. A Rust frame on that stack breaks all of
//! it: extendr evaluates through `R_tryEval`, whose top-level context hides the caller's
//! handlers (warnings then surfaced as "There were 50 or more warnings", errors came back wrapped
//! as "Evaluation error in lang!(...)"), and a `longjmp` through Rust frames would skip their
//! destructors (leaked threads, gigabytes of plan). `R_UnwindProtect` needs its cleanup function
//! to leave by a `longjmp` or C++ exception, which Rust cannot do soundly.
//!
//! So the level loop runs on a worker thread, as a coroutine of an R loop (`run_rfun()` in
//! `R/rfun.R`): the worker's [`SequentialCpu`] asks for each p-value over a channel, in pcalg's
//! call order, and `gpupc_rfun_step()` hands the request to R and returns; R calls the test
//! itself and passes the p-value with the next step. Nothing but R frames lies between the
//! user's handlers and the test. When R leaves the loop in any way (error, interrupt, a handler's
//! jump), its `on.exit` calls `gpupc_rfun_stop()`, which drops the channels: the worker's next
//! request fails, the level loop returns `Interrupted` through its own frames, and the thread is
//! joined. The external pointer's finalizer does the same if R never got there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use extendr_api::prelude::*;
use pc_core::cpu::SequentialCpu;
use pc_core::{run_skeleton, CiTest, PcError, SkeletonParams, SkeletonResult, Watch};

use crate::convert::{pmax_to_r, result_to_r, CoreResult};
use crate::watch::user_interrupted;

enum Request {
    Test(u32, u32, Vec<u32>),
    LevelStart(usize, usize),
    LevelEnd(usize, u64, usize, f64),
    Finished(Box<CoreResult<SkeletonResult>>, f64),
}

/// The worker's side of the channels: a request, then (for tests and hooks) the answer.
struct Link {
    requests: Sender<Request>,
    answers: Receiver<f64>,
    cancel: Arc<AtomicBool>,
}

impl Link {
    /// Sends `req` and waits for R's answer; a closed channel means R left the loop.
    fn ask(&self, req: Request) -> CoreResult<f64> {
        self.requests.send(req).map_err(|_| PcError::Interrupted)?;
        self.answers.recv().map_err(|_| PcError::Interrupted)
    }
}

struct RemoteTest<'a>(&'a Link);

impl CiTest for RemoteTest<'_> {
    type Scratch = ();
    fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> pc_core::error::Result<f64> {
        self.0.ask(Request::Test(x, y, s.to_vec()))
    }
}

struct RemoteWatch<'a>(&'a Link);

impl Watch for RemoteWatch<'_> {
    fn level_start(&mut self, level: usize, edges: usize, _planned: u64) {
        let _ = self.0.ask(Request::LevelStart(level, edges));
    }
    fn level_end(&mut self, level: usize, tests: u64, removed: usize, seconds: f64) {
        let _ = self.0.ask(Request::LevelEnd(level, tests, removed, seconds));
    }
    fn keep_going(&mut self) -> bool {
        !self.0.cancel.load(Ordering::Relaxed)
    }
    fn tick(&mut self, _: u64, _: u64) -> bool {
        self.keep_going()
    }
}

/// The R side of one run: held by an external pointer between `gpupc_rfun_step()` calls.
pub struct RfunRun {
    requests: Option<Receiver<Request>>,
    answers: Option<Sender<f64>>,
    cancel: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    order: pc_core::Order,
}

impl RfunRun {
    fn start(params: SkeletonParams) -> CoreResult<Self> {
        let (req_tx, req_rx) = channel();
        let (ans_tx, ans_rx) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let link = Link { requests: req_tx, answers: ans_rx, cancel: cancel.clone() };
        let order = params.order;
        let worker = std::thread::Builder::new()
            .name("gpupc-rfun".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let test = RemoteTest(&link);
                    let mut backend = SequentialCpu::new(&test, params.order);
                    run_skeleton(&params, &mut backend, &mut RemoteWatch(&link))
                }))
                .unwrap_or_else(|e| Err(PcError::Internal(pc_core::backend::panic_message(&*e))));
                let _ = link.requests.send(Request::Finished(Box::new(res), t0.elapsed().as_secs_f64()));
            })
            .map_err(|e| PcError::Internal(format!("could not start the level loop's thread: {e}")))?;
        Ok(RfunRun { requests: Some(req_rx), answers: Some(ans_tx), cancel, worker: Some(worker), order })
    }

    /// Closes the channels (the worker's next request fails) and waits for the worker.
    fn stop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        self.answers = None;
        self.requests = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl Drop for RfunRun {
    fn drop(&mut self) {
        self.stop();
    }
}

fn rfun_run(handle: &Robj) -> CoreResult<ExternalPtr<RfunRun>> {
    ExternalPtr::<RfunRun>::try_from(handle).map_err(|_| PcError::Internal("not a gpupc run handle".into()))
}

/// Starts the level loop for an R-function test; returns the run's handle.
pub fn start(params: SkeletonParams) -> CoreResult<Robj> {
    Ok(ExternalPtr::new(RfunRun::start(params)?).into())
}

/// Passes `answer` (the last test's p-value, or NULL) and returns the next request: an integer
/// vector c(x, y, S) (1-based) for a test, else list(kind = "level_start" | "level_end" |
/// "interrupt" | "done", ...).
pub fn step(handle: Robj, answer: Robj) -> CoreResult<Robj> {
    let mut ptr = rfun_run(&handle)?;
    let s: &mut RfunRun = &mut ptr;
    if !answer.is_null() {
        // the raw double: NA_real_ keeps its payload (stable.fast stores a level-0 p unmapped)
        let v = match answer.as_real_slice() {
            Some([v]) => *v,
            _ => return Err(PcError::Internal("the answer must be one double".into())),
        };
        if let Some(a) = &s.answers {
            let _ = a.send(v);
        }
    }
    let Some(requests) = &s.requests else { return Err(PcError::Internal("the run has stopped".into())) };
    let req = loop {
        match requests.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => break r,
            Err(RecvTimeoutError::Timeout) => {
                if user_interrupted() {
                    s.stop();
                    return Ok(list!(kind = "interrupt").into_robj());
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(PcError::Internal("the level loop's thread ended without a result".into())),
        }
    };
    Ok(match req {
        Request::Test(x, y, set) => {
            let mut v = Vec::with_capacity(set.len() + 2);
            v.push(x as i32 + 1);
            v.push(y as i32 + 1);
            v.extend(set.iter().map(|&a| a as i32 + 1));
            Robj::from(v)
        }
        Request::LevelStart(level, edges) => list!(kind = "level_start", level = level as i32, edges = edges as f64).into_robj(),
        Request::LevelEnd(level, tests, removed, seconds) => {
            list!(kind = "level_end", level = level as i32, tests = tests as f64, removed = removed as f64, seconds = seconds).into_robj()
        }
        Request::Finished(res, search_s) => {
            let order = s.order;
            s.stop();
            let mut res = (*res)?;
            let phases = list!(input_s = 0.0, setup_s = 0.0, search_s = search_s);
            let pmax = pmax_to_r(&mut res)?;
            let out = result_to_r(res, pmax, order, "cpu (1 thread, R callback)", List::new(0), phases, 1)?;
            list!(kind = "done", result = out).into_robj()
        }
    })
}

/// Stops the run (idempotent): R calls it on leaving its loop, however it leaves.
pub fn stop(handle: Robj) -> CoreResult<()> {
    let mut ptr = rfun_run(&handle)?;
    let s: &mut RfunRun = &mut ptr;
    s.stop();
    Ok(())
}
