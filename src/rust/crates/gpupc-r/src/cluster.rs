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
        Ok(Some(RTransport {
            rank: rank as usize,
            size: size as usize,
            allgather,
            fail_at_start: fail.as_deref() == Some("start"),
            perturb_dense: fail.as_deref() == Some("dense"),
            slices_per_rank: std::env::var("GPUPC_RANK_SLICES").ok().and_then(|v| v.trim().parse().ok()).filter(|&k: &usize| k >= 1),
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
/// exchanged level the edges, bytes and seconds (the slowest and fastest rank's among them).
pub(crate) fn ranks_to_r(t: &RTransport, levels: &[RankLevel], (dense, dense_check_s): (bool, f64)) -> Robj {
    let col = |f: &dyn Fn(&RankLevel) -> f64| Robj::from(levels.iter().map(f).collect::<Vec<f64>>());
    let lv = List::from_names_and_values(
        ["level", "edges", "local_edges", "bytes_sent", "bytes_received", "local_s", "allgather_s", "slowest_s", "fastest_s"],
        [
            Robj::from(levels.iter().map(|l| l.level as i32).collect::<Vec<_>>()),
            col(&|l| l.edges as f64),
            col(&|l| l.local_edges as f64),
            col(&|l| l.bytes_sent as f64),
            col(&|l| l.bytes_received as f64),
            col(&|l| l.local_seconds),
            col(&|l| l.collective_seconds),
            col(&|l| l.slowest_seconds),
            col(&|l| l.fastest_seconds),
        ],
    )
    .unwrap_or_default();
    let dense_levels = if dense { "every rank" } else { "split" };
    list!(rank = t.rank as i32, size = t.size as i32, allgather_s = t.seconds, dense_levels = dense_levels, dense_check_s = dense_check_s, levels = lv).into_robj()
}

/// Four interleaved multiply-rotate lanes over 64-bit words: not cryptographic, only a check that
/// the ranks were given the same values (several GB/s, so C or the data cost little next to a run).
struct Digest {
    lanes: [u64; 4],
    words: u64,
}

const K: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xFF51_AFD7_ED55_8CCD];

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

    fn words(&mut self, ws: impl Iterator<Item = u64>) {
        for w in ws {
            self.word(w);
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.word(u64::from_le_bytes(last));
    }

    fn finish(&self) -> u64 {
        let mut h = self.words;
        for (k, l) in self.lanes.iter().enumerate() {
            h = (h ^ l).wrapping_mul(K[k]).rotate_left(31);
        }
        h ^ (h >> 29)
    }

    /// An R value: its type, length and contents, its dim, names, levels and class, lists
    /// element by element; a function or an environment by its type alone.
    fn robj(&mut self, x: &Robj) {
        self.word(x.rtype() as u64);
        self.word(x.len() as u64);
        if let Some(v) = x.as_real_slice() {
            self.words(v.iter().map(|d| d.to_bits()));
        } else if let Some(v) = x.as_integer_slice() {
            self.words(v.iter().map(|&i| i as u32 as u64));
        } else if let Some(v) = x.as_logical_slice() {
            self.words(v.iter().map(|&b| match Option::<bool>::from(b) { Some(true) => 1, Some(false) => 0, None => 2 }));
        } else if let Some(v) = x.as_raw_slice() {
            self.bytes(v);
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
                self.robj(&v);
            }
        }
        for a in ["dim", "names", "levels", "class"] {
            if let Some(v) = x.get_attrib(a) {
                self.bytes(a.as_bytes());
                self.robj(&v);
            }
        }
    }
}

/// The digest of an R value, as 16 hexadecimal digits (R compares them across ranks).
#[extendr]
fn gpupc_input_digest(x: Robj) -> String {
    let mut d = Digest::new();
    d.robj(&x);
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
