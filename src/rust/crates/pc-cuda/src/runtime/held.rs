//! Device buffers an engine keeps for its next call on the same device (the junction tree's
//! tables, which the next query of the same tree reuses instead of mapping them again), given
//! back as soon as any engine plans memory on that device ([`Gpu::free_bytes`](super::gpu::Gpu::free_bytes),
//! [`Gpu::release_freed`](super::gpu::Gpu::release_freed)) or their owner takes them back. Entries
//! made by another process (a forked child's inherited ones, whose context is its parent's) are
//! forgotten, never freed.

use std::any::Any;
use std::sync::{Mutex, MutexGuard};

struct Held {
    ordinal: usize,
    owner: u64,
    pid: u32,
    item: Box<dyn Any + Send>,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

fn lock() -> MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

fn let_go(gone: Vec<Held>) {
    let me = std::process::id();
    for h in gone {
        if h.pid == me {
            drop(h.item);
        } else {
            std::mem::forget(h.item);
        }
    }
}

/// Keeps `item` for `owner` on device `ordinal`, in place of what anyone held there.
pub fn hold<T: Any + Send>(ordinal: usize, owner: u64, item: T) {
    let gone = {
        let mut l = lock();
        let (gone, stay): (Vec<Held>, Vec<Held>) = l.drain(..).partition(|h| h.ordinal == ordinal);
        *l = stay;
        l.push(Held { ordinal, owner, pid: std::process::id(), item: Box::new(item) });
        gone
    };
    let_go(gone);
}

/// What `owner` holds on `ordinal`, taken out (None: nothing, another type, or another process's).
pub fn take<T: Any + Send>(ordinal: usize, owner: u64) -> Option<T> {
    let me = std::process::id();
    let h = {
        let mut l = lock();
        let i = l.iter().position(|h| h.ordinal == ordinal && h.owner == owner && h.pid == me)?;
        l.swap_remove(i)
    };
    match h.item.downcast::<T>() {
        Ok(x) => Some(*x),
        Err(other) => {
            drop(other);
            None
        }
    }
}

/// Lets go of everything held on `ordinal`; whether anything was.
pub fn release(ordinal: usize) -> bool {
    let gone = {
        let mut l = lock();
        let (gone, stay): (Vec<Held>, Vec<Held>) = l.drain(..).partition(|h| h.ordinal == ordinal);
        *l = stay;
        gone
    };
    let any = !gone.is_empty();
    let_go(gone);
    any
}

/// Everything `owner` holds, on any device, taken out: this process's items of type `T` with
/// their devices (the rest let go).
pub fn take_owner<T: Any + Send>(owner: u64) -> Vec<(usize, T)> {
    let gone = {
        let mut l = lock();
        let (gone, stay): (Vec<Held>, Vec<Held>) = l.drain(..).partition(|h| h.owner == owner);
        *l = stay;
        gone
    };
    let me = std::process::id();
    let (mine, other): (Vec<Held>, Vec<Held>) = gone.into_iter().partition(|h| h.pid == me);
    let_go(other);
    mine.into_iter().filter_map(|h| h.item.downcast::<T>().ok().map(|x| (h.ordinal, *x))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn one_item_a_device_taken_by_its_owner_and_let_go_on_release() {
        // devices 900.. are this test's own (the registry is process-wide)
        let dropped = Arc::new(AtomicUsize::new(0));
        hold(900, 1, Counted(dropped.clone()));
        assert!(take::<Counted>(900, 2).is_none(), "another owner");
        assert!(take::<u32>(900, 1).is_none(), "another type: dropped");
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        hold(900, 1, Counted(dropped.clone()));
        hold(900, 3, Counted(dropped.clone()));
        assert_eq!(dropped.load(Ordering::Relaxed), 2, "one item a device: the first let go");
        assert!(take::<Counted>(900, 1).is_none());
        let x = take::<Counted>(900, 3).expect("its owner's");
        drop(x);
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        hold(901, 4, Counted(dropped.clone()));
        hold(902, 4, Counted(dropped.clone()));
        assert!(!release(903));
        assert!(release(901));
        assert_eq!(dropped.load(Ordering::Relaxed), 4);
        let taken = take_owner::<Counted>(4);
        assert_eq!(taken.iter().map(|x| x.0).collect::<Vec<_>>(), vec![902]);
        drop(taken);
        assert_eq!(dropped.load(Ordering::Relaxed), 5);
        assert!(!release(902));
    }

    #[test]
    fn another_process_entries_are_forgotten_not_dropped() {
        let dropped = Arc::new(AtomicUsize::new(0));
        lock().push(Held { ordinal: 910, owner: 5, pid: std::process::id().wrapping_add(1), item: Box::new(Counted(dropped.clone())) });
        assert!(take::<Counted>(910, 5).is_none(), "not this process's");
        assert!(release(910));
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
    }
}
