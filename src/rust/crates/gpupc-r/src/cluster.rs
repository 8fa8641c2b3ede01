//! A skeleton run as one of several MPI ranks (`cluster = "mpi"`): the exchange of
//! `pc_core::ranks` through an R function that R hands in (R/cluster.R: Rmpi's allgather on
//! MPI_COMM_WORLD), called on R's main thread as the watch hooks are; and the digest of a call's
//! inputs that R compares across ranks before anything runs.

use std::time::Instant;

use extendr_api::prelude::*;
use pc_core::ranks::{RankLevel, Transport};
use pc_core::PcError;

use crate::convert::{CoreResult, Named};

/// `args$cluster` of `skeleton_args()`: NULL, or list(rank, size, allgather), where
/// `allgather(raw)` returns every rank's raw vector in rank order.
pub(crate) struct RTransport {
    rank: usize,
    size: usize,
    allgather: Function,
    /// Test-only: this rank fails before its first level (`GPUPC_FAIL_RANK=rank:start`), its
    /// block of a level fails (`GPUPC_FAIL_RANK=rank:level`), or its levels 0-1 come out as if
    /// its engine rounded differently (`GPUPC_FAIL_RANK=rank:dense`).
    pub(crate) fail_at_start: bool,
    pub(crate) fail_at_level: Option<usize>,
    pub(crate) perturb_dense: bool,
    /// Slices per rank and level (`GPUPC_RANK_SLICES`, for benchmarks; unset: the default).
    pub(crate) slices_per_rank: Option<usize>,
    /// How levels >= 2 split (`GPUPC_RANK_ROWS`: 1 by rows wherever the engine can, 0 by edges;
    /// unset: by rows where the engine says it pays, a GPU's Gaussian set levels).
    pub(crate) rows: pc_core::ranks::RowsMode,
    /// Whether a level's slices move between the ranks as they run (`GPUPC_RANK_MOVE=0` keeps
    /// each rank's dealt slices, for comparisons; `GPUPC_RANK_MOVE=1` moves them on GPUs too).
    pub(crate) moving: bool,
    /// Whether this rank's slices split by edges move even where its backend runs a level best
    /// in one call, a GPU (`GPUPC_RANK_MOVE=1`, for comparisons).
    pub(crate) move_whole_levels: bool,
    /// Every rank's backend lets a level split by edges move its slices
    /// (`pc_core::ranks::start_search`'s answer).
    pub(crate) edges_move: bool,
    /// Every rank runs levels 0 and 1 whole (`pc_core::ranks::start_search`'s answer).
    pub(crate) dense_every_rank: bool,
    pub(crate) seconds: f64,
    /// The search's start was exchanged (`pc_core::ranks::start_search`): from then on the ranks
    /// meet at each level.
    pub(crate) started: bool,
}

impl RTransport {
    pub(crate) fn from_args(args: &List) -> CoreResult<Option<RTransport>> {
        let Some((_, c)) = args.iter().find(|(n, _)| *n == "cluster") else { return Ok(None) };
        if c.is_null() {
            return Ok(None);
        }
        let c = c.as_list().ok_or_else(|| PcError::Internal("the call's `cluster` must be a list".into()))?;
        let c = Named(&c);
        let (rank, size) = (c.int("rank")?, c.int("size")?);
        if size < 1 || rank < 0 || rank >= size {
            return Err(PcError::invalid("cluster", format!("rank {rank} of {size} ranks does not exist")));
        }
        let allgather = c.get("allgather")?.as_function().ok_or_else(|| PcError::Internal("the call's `cluster$allgather` must be a function".into()))?;
        let fail = std::env::var("GPUPC_FAIL_RANK").ok().and_then(|v| {
            let (r, at) = v.trim().split_once(':')?;
            (r.parse::<i32>().ok()? == rank).then(|| at.to_string())
        });
        let move_env = std::env::var("GPUPC_RANK_MOVE").ok();
        let move_env = move_env.as_deref().map(str::trim);
        Ok(Some(RTransport {
            rank: rank as usize,
            size: size as usize,
            allgather,
            fail_at_start: fail.as_deref() == Some("start"),
            perturb_dense: fail.as_deref() == Some("dense"),
            slices_per_rank: std::env::var("GPUPC_RANK_SLICES").ok().and_then(|v| v.trim().parse().ok()).filter(|&k: &usize| k >= 1),
            rows: match std::env::var("GPUPC_RANK_ROWS").ok().as_deref().map(str::trim) {
                Some("1") => pc_core::ranks::RowsMode::Always,
                Some("0") => pc_core::ranks::RowsMode::Never,
                _ => pc_core::ranks::RowsMode::Auto,
            },
            moving: move_env != Some("0"),
            move_whole_levels: move_env == Some("1"),
            edges_move: true,
            dense_every_rank: false,
            fail_at_level: fail.and_then(|l| l.parse().ok()),
            seconds: 0.0,
            started: false,
        }))
    }
}

impl Transport for RTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, bytes: &[u8]) -> pc_core::error::Result<Vec<Vec<u8>>> {
        let t = Instant::now();
        let r = self.allgather.call(pairlist!(Raw::from_bytes(bytes)));
        self.seconds += t.elapsed().as_secs_f64();
        let r = r.map_err(|e| PcError::Internal(format!("the ranks' exchange failed in R: {e}")))?;
        let l = r.as_list().ok_or_else(|| PcError::Internal("the ranks' exchange did not return a list".into()))?;
        l.values()
            .map(|v| v.as_raw_slice().map(<[u8]>::to_vec).ok_or_else(|| PcError::Internal("the ranks' exchange returned something other than raw vectors".into())))
            .collect()
    }
}

/// What `gpupc_last_run()$ranks` shows of a run: this rank, the ranks, where levels 0 and 1 ran
/// (whole on every rank, or split like the others) and the seconds of their check, and per
/// exchanged level the edges, bytes and seconds (of its share, of which making the level ready;
/// in the exchanges; making the outcomes after them; the slowest and fastest rank's shares), its
/// collectives, whether it was split by rows or by edges, and the slices this rank took over from
/// the others.
pub(crate) fn ranks_to_r(t: &RTransport, levels: &[RankLevel], (dense, dense_check_s): (bool, f64)) -> Robj {
    let col = |f: &dyn Fn(&RankLevel) -> f64| Robj::from(levels.iter().map(f).collect::<Vec<f64>>());
    let lv = List::from_names_and_values(
        ["level", "edges", "local_edges", "bytes_sent", "bytes_received", "local_s", "prepare_s", "allgather_s", "finish_s", "slowest_s", "fastest_s", "exchanges", "split", "slices_taken"],
        [
            Robj::from(levels.iter().map(|l| l.level as i32).collect::<Vec<_>>()),
            col(&|l| l.edges as f64),
            col(&|l| l.local_edges as f64),
            col(&|l| l.bytes_sent as f64),
            col(&|l| l.bytes_received as f64),
            col(&|l| l.local_seconds),
            col(&|l| l.prepare_seconds),
            col(&|l| l.collective_seconds),
            col(&|l| l.finish_seconds),
            col(&|l| l.slowest_seconds),
            col(&|l| l.fastest_seconds),
            col(&|l| l.exchanges as f64),
            Robj::from(levels.iter().map(|l| if l.by_rows { "rows" } else { "edges" }).collect::<Vec<_>>()),
            col(&|l| l.slices_taken as f64),
        ],
    )
    .unwrap_or_default();
    let dense_levels = if dense { "every rank" } else { "split" };
    list!(rank = t.rank as i32, size = t.size as i32, allgather_s = t.seconds, dense_levels = dense_levels, dense_check_s = dense_check_s, levels = lv).into_robj()
}

/// Four interleaved multiply-rotate lanes over 64-bit words: not cryptographic, only a check that
/// the ranks were given the same values. Each step is a bijection of its lane's state, so a
/// change to any bit of any word always changes the digest; a different order changes it unless
/// the values happen to collide.
struct Digest {
    lanes: [u64; 4],
    words: u64,
}

const K: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xFF51_AFD7_ED55_8CCD];

/// Words of a vector that one thread hashes alone: longer vectors are hashed chunk by chunk on
/// several threads (one thread hashes a few GB/s, and suffStat$C at p = 55,572 is 25 GB on every
/// rank). A constant, not a share of the threads, so that ranks with different core counts agree.
const CHUNK_WORDS: usize = 1 << 20;

/// The threads of one digest, started at its first large vector only: most calls' inputs are
/// small, and a pool costs more than hashing them.
struct Threads {
    requested: usize,
    pool: Option<Option<rayon::ThreadPool>>,
}

impl Threads {
    fn new(requested: usize) -> Self {
        Threads { requested, pool: None }
    }

    /// None when one thread was asked for, or none could be started: the chunks are then hashed
    /// one after another, to the same digest.
    fn pool(&mut self) -> Option<&rayon::ThreadPool> {
        let requested = self.requested;
        self.pool
            .get_or_insert_with(|| {
                (pc_core::threads::effective_threads(requested) > 1).then(|| pc_core::threads::call_pool(requested, "digest").ok()).flatten()
            })
            .as_ref()
    }
}

impl Digest {
    fn new() -> Self {
        Digest { lanes: [1, 2, 3, 4], words: 0 }
    }

    #[inline]
    fn word(&mut self, w: u64) {
        let k = (self.words % 4) as usize;
        self.lanes[k] = (self.lanes[k] ^ w).wrapping_mul(K[k]).rotate_left(29);
        self.words += 1;
    }

    /// `word` on the words `at(0)`, ..., `at(n - 1)`, four a step once lane 0 is next: the
    /// lanes' chains of multiplies then run side by side in registers.
    #[inline]
    fn indexed(&mut self, n: usize, at: impl Fn(usize) -> u64) {
        let lead = ((4 - self.words % 4) % 4).min(n as u64) as usize;
        for i in 0..lead {
            self.word(at(i));
        }
        let quads = (n - lead) / 4;
        let mut l = self.lanes;
        for j in 0..quads {
            let i = lead + 4 * j;
            for (k, lane) in l.iter_mut().enumerate() {
                *lane = (*lane ^ at(i + k)).wrapping_mul(K[k]).rotate_left(29);
            }
        }
        self.lanes = l;
        self.words += 4 * quads as u64;
        for i in lead + 4 * quads..n {
            self.word(at(i));
        }
    }

    fn words<T>(&mut self, v: &[T], word: impl Fn(&T) -> u64) {
        self.indexed(v.len(), |i| word(&v[i]));
    }

    /// The length, the bytes as little-endian words, and the last word zero-padded.
    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        let whole = b.len() / 8;
        self.indexed(whole, |i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8])));
        let rest = &b[8 * whole..];
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        self.word(u64::from_le_bytes(last));
    }

    fn finish(&self) -> u64 {
        let mut h = self.words;
        for (k, l) in self.lanes.iter().enumerate() {
            h = (h ^ l).wrapping_mul(K[k]).rotate_left(31);
        }
        h ^ (h >> 29)
    }

    /// `v`, `per_chunk` elements at a time when it is large: each chunk's own digest, on the
    /// pool's threads (the slice is plain memory, read without R), then the chunks' count and
    /// digests in order, so that chunks swapped still differ.
    fn chunked<T: Sync>(&mut self, v: &[T], per_chunk: usize, threads: &mut Threads, one: impl Fn(&mut Digest, &[T]) + Sync) {
        if v.len() <= per_chunk {
            return one(self, v);
        }
        let digest = |c: &[T]| {
            let mut d = Digest::new();
            one(&mut d, c);
            d.finish()
        };
        let sums: Vec<u64> = match threads.pool() {
            Some(pool) => {
                use rayon::prelude::*;
                pool.install(|| v.par_chunks(per_chunk).map(digest).collect())
            }
            None => v.chunks(per_chunk).map(digest).collect(),
        };
        self.word(sums.len() as u64);
        self.words(&sums, |&h| h);
    }

    /// An R value: its type, length and contents, its dim, names, levels and class, lists
    /// element by element; a function or an environment by its type alone.
    fn robj(&mut self, x: &Robj, threads: &mut Threads) {
        self.word(x.rtype() as u64);
        self.word(x.len() as u64);
        if let Some(v) = x.as_real_slice() {
            self.chunked(v, CHUNK_WORDS, threads, |d, c| d.words(c, |x| x.to_bits()));
        } else if let Some(v) = x.as_integer_slice() {
            self.chunked(v, CHUNK_WORDS, threads, |d, c| d.words(c, |&i| i as u32 as u64));
        } else if let Some(v) = x.as_logical_slice() {
            // the stored int, not Rbool's conversions: this may run off R's main thread
            self.chunked(v, CHUNK_WORDS, threads, |d, c| d.words(c, |b| logical_word(b.0)));
        } else if let Some(v) = x.as_raw_slice() {
            self.chunked(v, 8 * CHUNK_WORDS, threads, |d, c| d.bytes(c));
        } else if let Some(it) = x.as_str_iter() {
            for s in it {
                if s.is_na() {
                    self.word(u64::MAX);
                } else {
                    self.bytes(s.as_bytes());
                }
            }
        } else if let Some(l) = x.as_list() {
            for v in l.values() {
                self.robj(&v, threads);
            }
        }
        for a in ["dim", "names", "levels", "class"] {
            if let Some(v) = x.get_attrib(a) {
                self.bytes(a.as_bytes());
                self.robj(&v, threads);
            }
        }
    }
}

/// TRUE, FALSE and NA as words (R stores NA as i32::MIN, TRUE as any other nonzero value).
#[inline]
fn logical_word(b: i32) -> u64 {
    match b {
        i32::MIN => 2,
        0 => 0,
        _ => 1,
    }
}

/// The digest of an R value, as 16 hexadecimal digits (R compares them across ranks); its large
/// vectors are hashed on `threads` threads (0: every core), which do not change the digest.
#[extendr]
fn gpupc_input_digest(x: Robj, threads: i32) -> String {
    let mut d = Digest::new();
    d.robj(&x, &mut Threads::new(threads.max(0) as usize));
    format!("{:016x}", d.finish())
}

/// `n` bytes of the raw vector `src` from `from` (0-based) written into the raw vector `dst` at
/// `at`, in place: an exchange in several rounds assembles each rank's bytes piece by piece, and
/// R's own `dst[i] <- src[j]` would build index vectors of 4 to 8 bytes per byte copied (gigabytes
/// beside a large exchange). `dst` must be a vector that R code refers to only through the
/// caller's own fresh variable (`mpi_allgather_raw()` allocates it for this).
#[extendr]
fn gpupc_raw_copy(mut dst: Robj, at: f64, src: Robj, from: f64, n: f64) -> Robj {
    let bad = |what: &str| crate::rerror::r_error("internal", &format!("raw copy: {what}"), None);
    if [at, from, n].iter().any(|v| !v.is_finite() || *v < 0.0 || v.fract() != 0.0) {
        return bad("offsets and length must be whole numbers >= 0");
    }
    let (at, from, n) = (at as usize, from as usize, n as usize);
    if n == 0 {
        // a rank past its last byte sends nothing in the later rounds
        return ().into();
    }
    let Some((s_ptr, s_len)) = src.as_raw_slice().map(|s| (s.as_ptr(), s.len())) else { return bad("the source is not a raw vector") };
    if from.checked_add(n).map_or(true, |e| e > s_len) {
        return bad("the source is too short");
    }
    let Some(d) = dst.as_raw_slice_mut() else { return bad("the destination is not a raw vector") };
    if at.checked_add(n).map_or(true, |e| e > d.len()) {
        return bad("the destination is too short");
    }
    // SAFETY: both ranges lie inside their vectors (checked above), which R keeps alive for the
    // call; ptr::copy is a memmove, so `src` and `dst` may even be the same vector
    unsafe { std::ptr::copy(s_ptr.add(from), d.as_mut_ptr().add(at), n) };
    ().into()
}

extendr_module! {
    mod cluster;
    fn gpupc_input_digest;
    fn gpupc_raw_copy;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real_digest(v: &[f64], threads: &mut Threads) -> u64 {
        let mut d = Digest::new();
        d.word(v.len() as u64);
        d.chunked(v, CHUNK_WORDS, threads, |d, c| d.words(c, |x| x.to_bits()));
        d.finish()
    }

    fn pool_of(n: usize) -> Threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        Threads { requested: n, pool: Some(Some(pool)) }
    }

    /// 3.5 chunks of distinct values: a remainder, and chunks that differ from one another.
    fn large() -> Vec<f64> {
        (0..CHUNK_WORDS * 7 / 2).map(|i| (i as f64).sqrt() * 1e-3 + i as f64).collect()
    }

    #[test]
    fn four_lanes_a_step_match_one_word_at_a_time() {
        let ws: Vec<u64> = (0..37u64).map(|i| i.wrapping_mul(0x1234_5678_9ABC_DEF1) ^ (i << 60)).collect();
        for lead in 0..4 {
            let (mut a, mut b) = (Digest::new(), Digest::new());
            for w in &ws[..lead] {
                a.word(*w);
                b.word(*w);
            }
            for w in &ws[lead..] {
                a.word(*w);
            }
            b.words(&ws[lead..], |&w| w);
            assert_eq!((a.lanes, a.words), (b.lanes, b.words), "lead {lead}");
        }
        let bytes: Vec<u8> = (0..83u8).collect();
        let mut a = Digest::new();
        a.word(bytes.len() as u64);
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            a.word(u64::from_le_bytes(w));
        }
        let mut b = Digest::new();
        b.bytes(&bytes);
        assert_eq!(a.finish(), b.finish());
    }

    #[test]
    fn the_threads_do_not_change_the_digest() {
        let v = large();
        let one = real_digest(&v, &mut Threads::new(1));
        assert_eq!(one, real_digest(&v, &mut pool_of(1)));
        assert_eq!(one, real_digest(&v, &mut pool_of(3)));
        assert_eq!(one, real_digest(&v, &mut pool_of(8)));
        assert_eq!(one, real_digest(&v, &mut Threads::new(0)));
    }

    #[test]
    fn one_bit_of_any_chunk_changes_the_digest() {
        let mut v = large();
        let mut threads = pool_of(4);
        let base = real_digest(&v, &mut threads);
        let n = v.len();
        // first chunk, a middle one, the last whole one, the remainder; each word's first and last bit
        for i in [0, CHUNK_WORDS + 12_345, 3 * CHUNK_WORDS - 1, 3 * CHUNK_WORDS, n - 1] {
            for bit in [0, 31, 63] {
                let old = v[i];
                v[i] = f64::from_bits(old.to_bits() ^ (1 << bit));
                assert_ne!(real_digest(&v, &mut threads), base, "word {i}, bit {bit}");
                v[i] = old;
            }
        }
        assert_eq!(real_digest(&v, &mut threads), base);
    }

    #[test]
    fn swapped_chunks_change_the_digest() {
        let mut v = large();
        let mut threads = pool_of(2);
        let base = real_digest(&v, &mut threads);
        let (a, b) = v.split_at_mut(2 * CHUNK_WORDS);
        a[..CHUNK_WORDS].swap_with_slice(&mut b[..CHUNK_WORDS]);
        assert_ne!(real_digest(&v, &mut threads), base);
        let mut w = large();
        let (a, b) = w.split_at_mut(CHUNK_WORDS);
        a.swap_with_slice(&mut b[..CHUNK_WORDS]);
        assert_ne!(real_digest(&w, &mut threads), base);
        assert_ne!(real_digest(&w, &mut threads), real_digest(&v, &mut threads));
    }

    #[test]
    fn large_inputs_of_other_lengths_differ() {
        let v = large();
        let mut threads = pool_of(2);
        let base = real_digest(&v, &mut threads);
        let mut longer = v.clone();
        longer.push(0.0);
        assert_ne!(real_digest(&longer, &mut threads), base);
        assert_ne!(real_digest(&v[..v.len() - 1], &mut threads), base);
        // whole chunks only, and one word past them
        assert_ne!(real_digest(&v[..3 * CHUNK_WORDS], &mut threads), real_digest(&v[..3 * CHUNK_WORDS + 1], &mut threads));
        // zeros, without the length in front: the last chunk's word count still tells them apart
        let zeros = vec![0.0f64; 2 * CHUNK_WORDS + 8];
        let (mut a, mut b) = (Digest::new(), Digest::new());
        a.chunked(&zeros[..2 * CHUNK_WORDS + 4], CHUNK_WORDS, &mut threads, |d, c| d.words(c, |x| x.to_bits()));
        b.chunked(&zeros, CHUNK_WORDS, &mut threads, |d, c| d.words(c, |x| x.to_bits()));
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn integers_logicals_and_raw_bytes_in_chunks() {
        let ints: Vec<i32> = (0..(CHUNK_WORDS * 5 / 2) as i32).map(|i| i.wrapping_mul(7919)).collect();
        let bytes: Vec<u8> = (0..8 * CHUNK_WORDS * 5 / 2 + 3).map(|i| (i * 31 % 251) as u8).collect();
        let logicals: Vec<i32> = (0..CHUNK_WORDS * 5 / 2).map(|i| [1, 0, i32::MIN, 7][i % 4]).collect();
        let digest_i = |v: &[i32], t: &mut Threads| {
            let mut d = Digest::new();
            d.chunked(v, CHUNK_WORDS, t, |d, c| d.words(c, |&i| i as u32 as u64));
            d.finish()
        };
        let digest_l = |v: &[i32], t: &mut Threads| {
            let mut d = Digest::new();
            d.chunked(v, CHUNK_WORDS, t, |d, c| d.words(c, |&b| logical_word(b)));
            d.finish()
        };
        let digest_b = |v: &[u8], t: &mut Threads| {
            let mut d = Digest::new();
            d.chunked(v, 8 * CHUNK_WORDS, t, |d, c| d.bytes(c));
            d.finish()
        };
        let (mut one, mut four) = (Threads::new(1), pool_of(4));
        assert_eq!(digest_i(&ints, &mut one), digest_i(&ints, &mut four));
        assert_eq!(digest_l(&logicals, &mut one), digest_l(&logicals, &mut four));
        assert_eq!(digest_b(&bytes, &mut one), digest_b(&bytes, &mut four));
        let mut ints2 = ints.clone();
        ints2[CHUNK_WORDS * 2 + 5] ^= 1 << 31;
        assert_ne!(digest_i(&ints, &mut four), digest_i(&ints2, &mut four));
        let mut logicals2 = logicals.clone();
        logicals2[CHUNK_WORDS + 2] = 0;
        assert_ne!(digest_l(&logicals, &mut four), digest_l(&logicals2, &mut four));
        // a TRUE stored as 7 is still TRUE
        let mut logicals3 = logicals.clone();
        logicals3[3] = 1;
        assert_eq!(digest_l(&logicals, &mut four), digest_l(&logicals3, &mut four));
        for i in [0, 8 * CHUNK_WORDS + 1, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[i] ^= 0x80;
            assert_ne!(digest_b(&bytes, &mut four), digest_b(&b, &mut four), "byte {i}");
        }
    }
}
