//! Progress, verbose output and Ctrl-C, all on R's main thread (the only one allowed to touch R).

use std::ffi::c_void;

use extendr_api::prelude::*;
use pc_core::Watch;

extern "C" {
    fn R_ToplevelExec(fun: Option<unsafe extern "C" fn(*mut c_void)>, data: *mut c_void) -> i32;
    fn R_CheckUserInterrupt();
}

unsafe extern "C" fn check_interrupt(_: *mut c_void) {
    R_CheckUserInterrupt();
}

/// True when the user pressed Ctrl-C. R_CheckUserInterrupt would longjmp over our frames; inside
/// R_ToplevelExec the jump stops there and we only see FALSE.
pub fn user_interrupted() -> bool {
    unsafe { R_ToplevelExec(Some(check_interrupt), std::ptr::null_mut()) == 0 }
}

/// Calls the R hooks `level_start(level, edges, planned)`, `level_end(level, tests, removed,
/// seconds)` and `tick(done, total)` (FALSE from it stops the work); any of them may be NULL.
pub struct RWatch {
    level_start: Option<Function>,
    level_end: Option<Function>,
    tick: Option<Function>,
    pub interrupted: bool,
}

fn hook(hooks: &List, name: &str) -> Option<Function> {
    hooks.iter().find(|(n, _)| *n == name).and_then(|(_, f)| f.as_function())
}

/// Calls the R hook `name` of `hooks` (no arguments), when there is one.
pub fn call_hook(hooks: &List, name: &str) {
    if let Some(f) = hook(hooks, name) {
        let _ = f.call(pairlist!());
    }
}

impl RWatch {
    pub fn new(hooks: &List) -> Self {
        RWatch { level_start: hook(hooks, "level_start"), level_end: hook(hooks, "level_end"), tick: hook(hooks, "tick"), interrupted: false }
    }
}

impl Watch for RWatch {
    fn level_start(&mut self, level: usize, edges: usize, planned: u64) {
        if let Some(f) = &self.level_start {
            let _ = f.call(pairlist!(level as i32, edges as f64, planned as f64));
        }
    }

    fn level_end(&mut self, level: usize, tests: u64, removed: usize, seconds: f64) {
        if let Some(f) = &self.level_end {
            let _ = f.call(pairlist!(level as i32, tests as f64, removed as f64, seconds));
        }
    }

    fn keep_going(&mut self) -> bool {
        if user_interrupted() {
            self.interrupted = true;
            return false;
        }
        true
    }

    fn tick(&mut self, done: u64, total: u64) -> bool {
        if user_interrupted() {
            self.interrupted = true;
            return false;
        }
        if let Some(f) = &self.tick {
            // a hook that answers FALSE stops the work as Ctrl-C does (how the tests interrupt it)
            if f.call(pairlist!(done as f64, total as f64)).is_ok_and(|r| r.as_bool() == Some(false)) {
                self.interrupted = true;
                return false;
            }
        }
        true
    }
}
