//! Junction trees' device parts kept between queries (`pc_cuda::jtree::KeptTree`): at most one
//! per GPU for the whole process, the one its last query used, so that a loop of queries on one
//! compiled tree opens it once, while the memory held stays bounded (Munin: 0.6 GB of potentials
//! and cell maps). A compiled tree's handle ([`Compiled`]) carries a key no other tree of the
//! process gets; its finalizer drops what is kept under it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use pc_jtree::Plan;

/// What a slot holds: the key of the tree it belongs to and its GPU.
pub trait Slot {
    fn key(&self) -> u64;
    fn ordinal(&self) -> usize;
}

impl Slot for pc_cuda::jtree::KeptTree {
    fn key(&self) -> u64 {
        pc_cuda::jtree::KeptTree::key(self)
    }
    fn ordinal(&self) -> usize {
        pc_cuda::jtree::KeptTree::ordinal(self)
    }
}

/// One kept entry per GPU.
pub struct Slots<T> {
    kept: Mutex<Vec<T>>,
}

impl<T: Slot> Slots<T> {
    pub const fn new() -> Self {
        Slots { kept: Mutex::new(Vec::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is kept for tree `key` on GPU `ordinal`, taken out (a query uses it alone).
    pub fn take(&self, key: u64, ordinal: usize) -> Option<T> {
        let mut k = self.lock();
        let i = k.iter().position(|t| t.key() == key && t.ordinal() == ordinal)?;
        Some(k.swap_remove(i))
    }

    /// Keeps `t`; what was kept on its GPU goes (dropped once the lock is released).
    pub fn put(&self, t: T) {
        let gone: Vec<T> = {
            let mut k = self.lock();
            let (gone, stay): (Vec<T>, Vec<T>) = k.drain(..).partition(|x| x.ordinal() == t.ordinal());
            *k = stay;
            k.push(t);
            gone
        };
        drop(gone);
    }

    /// Drops what is kept for tree `key` (its handle is gone).
    pub fn forget(&self, key: u64) {
        let gone: Vec<T> = {
            let mut k = self.lock();
            let (gone, stay): (Vec<T>, Vec<T>) = k.drain(..).partition(|x| x.key() == key);
            *k = stay;
            gone
        };
        drop(gone);
    }

    /// How many entries are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The process's kept device trees.
pub static KEPT: Slots<pc_cuda::jtree::KeptTree> = Slots::new();

/// A compiled tree as R holds it (behind an external pointer): its plan and its key.
pub struct Compiled {
    pub key: u64,
    pub plan: Plan,
}

impl Compiled {
    pub fn new(plan: Plan) -> Compiled {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Compiled { key: NEXT.fetch_add(1, Ordering::Relaxed), plan }
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        KEPT.forget(self.key);
        pc_cuda::jtree::release_held(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    #[derive(Debug, PartialEq)]
    struct Fake(u64, usize);
    impl Slot for Fake {
        fn key(&self) -> u64 {
            self.0
        }
        fn ordinal(&self) -> usize {
            self.1
        }
    }
    impl Drop for Fake {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn one_tree_is_kept_per_gpu_and_a_gone_tree_loses_its_entries() {
        let s: Slots<Fake> = Slots::new();
        s.put(Fake(1, 0));
        s.put(Fake(1, 1));
        assert_eq!(s.len(), 2);
        // tree 2 on GPU 0 replaces tree 1 there
        s.put(Fake(2, 0));
        assert_eq!(DROPPED.load(Ordering::Relaxed), 1);
        assert_eq!(s.take(1, 0), None);
        let t = s.take(2, 0).expect("kept");
        assert_eq!((t.0, t.1), (2, 0));
        assert_eq!(s.take(2, 0), None, "taken out while in use");
        s.put(t);
        s.forget(1);
        assert_eq!(s.len(), 1);
        assert!(s.take(1, 1).is_none());
        assert!(s.take(2, 0).is_some());
        assert_eq!(s.len(), 0);
        // the three put were each dropped once: replaced, forgotten, taken and let go
        assert_eq!(DROPPED.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn every_compiled_tree_gets_its_own_key() {
        let net = pc_jtree::Network::new(vec!["a".into()], vec![vec!["0".into(), "1".into()]], vec![vec![]], vec![vec![0.5, 0.5]]).unwrap();
        let plan = |_| Plan::compile(&net, pc_jtree::Heuristic::MinFill, pc_jtree::Limits::default(), 1).unwrap();
        let (a, b) = (Compiled::new(plan(0)), Compiled::new(plan(1)));
        assert_ne!(a.key, b.key);
    }
}
