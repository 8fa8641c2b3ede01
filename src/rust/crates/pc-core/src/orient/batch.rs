//! The seam between the conservative / majority-rule triple checks and whatever runs their CI
//! tests: a batch of (x, y, S) tests in, one p-value per test out. The CPU evaluators live here;
//! a GPU backend implements [`BatchEvaluator`] the same way.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::backend::{run_watched, Control, Watch};
use crate::citest::CiTest;
use crate::error::{PcError, Result};

/// Tests t = 0..len(): x[t], y[t] and S = `s[s_start[t]..s_start[t + 1]]` (0-based).
#[derive(Debug)]
pub struct TestBatch {
    pub x: Vec<u32>,
    pub y: Vec<u32>,
    pub s_start: Vec<usize>,
    pub s: Vec<u32>,
}

impl Default for TestBatch {
    fn default() -> Self {
        TestBatch { x: Vec::new(), y: Vec::new(), s_start: vec![0], s: Vec::new() }
    }
}

impl TestBatch {
    pub fn len(&self) -> usize {
        self.x.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    pub fn clear(&mut self) {
        self.x.clear();
        self.y.clear();
        self.s.clear();
        self.s_start.clear();
        self.s_start.push(0);
    }

    pub fn push(&mut self, x: u32, y: u32, s: impl IntoIterator<Item = u32>) {
        self.x.push(x);
        self.y.push(y);
        self.s.extend(s);
        self.s_start.push(self.s.len());
    }

    #[inline]
    pub fn set(&self, t: usize) -> &[u32] {
        &self.s[self.s_start[t]..self.s_start[t + 1]]
    }
}

/// Evaluates batches of CI tests.
pub trait BatchEvaluator {
    fn name(&self) -> String;
    /// True when equal (x, y, S) always give equal p-values and the order of calls does not
    /// matter (native tests), so the triple checks evaluate each distinct test once and in any
    /// order. False for an R function: pcalg calls it once per triple, in its order, and so do
    /// the checks then, one batch per triple in that order.
    fn shares_results(&self) -> bool;
    /// `out` receives one p-value per test (NaN allowed; the caller decides what it means).
    /// `watch` is ticked on the calling thread with the batch's tests done (or asked whether to
    /// go on); a `false` from it ends with `Interrupted`.
    fn p_values(&mut self, batch: &TestBatch, out: &mut Vec<f64>, watch: &mut dyn Watch) -> Result<()>;
}

/// A native test on a rayon pool built for the call.
pub struct ParallelBatch<'a, T> {
    test: &'a T,
    pool: &'a rayon::ThreadPool,
}

impl<'a, T: CiTest + Sync> ParallelBatch<'a, T> {
    pub fn new(test: &'a T, pool: &'a rayon::ThreadPool) -> Self {
        ParallelBatch { test, pool }
    }
}

impl<T: CiTest + Sync> BatchEvaluator for ParallelBatch<'_, T> {
    fn name(&self) -> String {
        format!("cpu ({} threads)", self.pool.current_num_threads())
    }

    fn shares_results(&self) -> bool {
        true
    }

    fn p_values(&mut self, batch: &TestBatch, out: &mut Vec<f64>, watch: &mut dyn Watch) -> Result<()> {
        let n = batch.len();
        out.clear();
        out.try_reserve_exact(n).map_err(|_| PcError::Internal(format!("out of memory for {n} p-values")))?;
        out.resize(n, f64::NAN);
        let (test, pool) = (self.test, self.pool);
        let chunk = 256;
        // ticks count tests
        run_watched(n as u64, watch, Duration::from_millis(100), |ctl: &Control| {
            pool.install(|| {
                out.par_chunks_mut(chunk).enumerate().try_for_each_init(T::Scratch::default, |sc, (ci, dst)| -> Result<()> {
                    if ctl.cancelled() {
                        return Err(PcError::Interrupted);
                    }
                    for (i, d) in dst.iter_mut().enumerate() {
                        let t = ci * chunk + i;
                        *d = test.p_value(sc, batch.x[t], batch.y[t], batch.set(t))?;
                    }
                    ctl.edges_done.fetch_add(dst.len() as u64, Ordering::Relaxed);
                    Ok(())
                })
            })
        })
    }
}

/// Any test, one call after the other on the calling thread, in the batch's order (R callbacks).
pub struct SequentialBatch<'a, T> {
    test: &'a T,
}

impl<'a, T: CiTest> SequentialBatch<'a, T> {
    pub fn new(test: &'a T) -> Self {
        SequentialBatch { test }
    }
}

impl<T: CiTest> BatchEvaluator for SequentialBatch<'_, T> {
    fn name(&self) -> String {
        "cpu (1 thread, R callback)".to_string()
    }

    fn shares_results(&self) -> bool {
        false
    }

    fn p_values(&mut self, batch: &TestBatch, out: &mut Vec<f64>, watch: &mut dyn Watch) -> Result<()> {
        out.clear();
        let mut sc = T::Scratch::default();
        let mut last = Instant::now();
        for t in 0..batch.len() {
            if last.elapsed() >= Duration::from_millis(100) {
                last = Instant::now();
                if !watch.keep_going() {
                    return Err(PcError::Interrupted);
                }
            }
            out.push(self.test.p_value(&mut sc, batch.x[t], batch.y[t], batch.set(t))?);
        }
        Ok(())
    }
}
