//! One skeleton search over several processes (MPI ranks, launched SPMD: every rank makes the same
//! call), with the result of one process in every slot.
//!
//! The level loop is deterministic, so every rank holds the same graph at a level's start and
//! plans the same level. [`Ranks`] cuts the plan's edges into slices of about equal test counts
//! ([`rank_slices`], [`SLICES_PER_RANK`] per rank), dealt to the ranks in turn, runs only its own
//! slices on its local backend, and exchanges their outcomes with every other rank
//! ([`Transport::allgather`]); each rank then holds the whole level's outcomes in plan order, and
//! the level loop applies them as it would one backend's. The slices are dealt rather than one
//! contiguous block given to each rank because a test count is the most an edge may need: an
//! early success cuts it short, and how often that happens drifts along the plan's order (one
//! block per rank left the first rank 59% of a Gaussian level's time at p = 55,572, and at
//! cmiknnCItest's level 2 the second rank twice the first's); dealt slices give every rank the
//! same mixture, and with several ranks the slices also move as the ranks run: a rank runs its
//! slices a batch at a time as they are granted and takes the ungranted tail of a rank that is
//! behind ([`Deal`], `deal.rs`), the ranks exchanging their progress (every 10 ms split by rows,
//! as a grant nears its end split by edges). Only outcomes travel (about 9 to 20 bytes an edge,
//! [`encode_outcomes`]), never the graph, pMax or sepsets: every rank derives them itself,
//! identically.
//!
//! Levels 0 and 1 of gaussCItest run whole on every rank instead ([`DenseLevels`]: no per-edge
//! plans, which at p = 55,572 would hold 86 GB per rank and exchange 14 GB), where every rank's
//! engine is of one kind ([`DenseLevels::dense_kind`], agreed in [`start_search`]): the ranks then
//! compute the same levels alike, and only a fingerprint of what they produced travels, checked at
//! the end of those levels, so that ranks whose engines round differently after all stop with an
//! error instead of searching on from different graphs. Ranks of different kinds plan and split
//! those levels like the others.
//!
//! A rank whose slices fail still takes part in the exchange, with its error in place of the
//! outcomes, so no rank waits for good: every rank then returns the error of the lowest rank that
//! failed ([`PcError::OnRank`]). Each message also carries the level's fingerprint (level, edges,
//! tests, a hash of the edges); ranks whose plans differ (their inputs did) stop with an error
//! instead of mixing different searches.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use crate::backend::{Backend, Control, Watch};
use crate::deal::{Claims, Deal, Report};
use crate::dense::{DenseLevelReport, DenseLevels};
use crate::error::{PcError, Result};
use crate::graph::{Adjacency, BitMatrix};
use crate::multi::weighted_blocks;
use crate::plan::{EdgeOutcome, LevelPlan, Order};
use crate::rows::{KeyBoard, RowKeys, NO_KEY};

/// How the ranks of one search reach each other (MPI's `MPI_COMM_WORLD` in R, through Rmpi;
/// threads in the tests). Every rank calls [`Transport::allgather`] the same number of times.
pub trait Transport {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Every rank's `bytes`, in rank order (this rank's own among them).
    fn allgather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>>;
}

/// One level's exchange as this rank saw it (for `gpupc_last_run()`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankLevel {
    pub level: usize,
    /// The level's edges, and those of this rank's slices.
    pub edges: usize,
    pub local_edges: usize,
    /// This rank's message, and the other ranks' messages together.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Seconds running this rank's slices, and in the collective (waiting for the slowest rank
    /// included).
    pub local_seconds: f64,
    pub collective_seconds: f64,
    /// The slowest and the fastest rank's seconds on their slices (every rank sends its own):
    /// their gap is the level's load imbalance.
    pub slowest_seconds: f64,
    pub fastest_seconds: f64,
    /// Collectives of the level: 1 for a level split by edges; for one split by rows, the
    /// exchanges of keys while the ranks ran, and the last one.
    pub exchanges: u64,
    /// The level was split by rows (the ranks posting their successes to each other as they ran),
    /// not by edges.
    pub by_rows: bool,
    /// Of `local_seconds`, making the level ready on this rank before its share ran: split by rows,
    /// the whole level's rows and keys (every rank makes them); by edges, this rank's edges listed.
    pub prepare_seconds: f64,
    /// After the last exchange, the level's outcomes made from every rank's (split by rows: from
    /// the merged keys, for the whole level, on every rank; by edges: the other ranks' decoded and
    /// dealt back into plan order).
    pub finish_seconds: f64,
    /// The slices this rank took over from other ranks' queues as the level ran ([`Deal`]).
    pub slices_taken: u64,
}

/// A local backend run as one rank of several: see the module's text.
pub struct Ranks<'t, B> {
    pub local: B,
    transport: &'t mut dyn Transport,
    pub levels: Vec<RankLevel>,
    /// Test-only: this rank's slices fail at this level, or its dense level (how the fault path
    /// is exercised end to end; the R glue sets it from `GPUPC_FAIL_RANK`).
    pub fail_at_level: Option<usize>,
    /// Every rank's engine runs the dense levels and is of one kind ([`start_search`]'s answer):
    /// each rank then runs levels 0 and 1 whole itself.
    pub dense_every_rank: bool,
    /// Test-only: this rank's fingerprint of the dense levels is altered, as if its engine
    /// rounded differently (`GPUPC_FAIL_RANK=rank:dense`).
    pub perturb_dense: bool,
    /// Threads for the fingerprint (pMax alone is 3.2 GB at p = 20000).
    pub threads: usize,
    /// Slices dealt to each rank per level ([`SLICES_PER_RANK`]; 1 gives each rank one contiguous
    /// block, for comparisons). Every rank must use the same: the exchange checks it.
    pub slices_per_rank: usize,
    /// Whether "stable" levels >= 2 are split by rows ([`RowsMode`]); every rank must use the
    /// same (the search's start compares it, as part of [`dense_kind`]).
    pub rows: RowsMode,
    /// Whether the slices of a level move between several ranks as they run ([`Deal`]; false keeps
    /// each rank's dealt slices in one batch and one exchange, for comparisons). Every rank must
    /// use the same: the exchanges check it.
    pub moving: bool,
    /// Whether every rank's backend lets the slices of a level split by edges move
    /// ([`start_search`]'s answer; where one runs a level best in one call, they stay dealt).
    pub edges_move: bool,
    /// A failure this rank reports at its first exchange instead of stopping alone (the others
    /// would wait there for it): the host memory of levels planned after all.
    pub pending: Option<PcError>,
    /// The dense levels ran (on every rank, when there are several).
    pub dense_ran: bool,
    /// Seconds in the dense levels' check, the collective included.
    pub dense_check_seconds: f64,
    dense: DenseRun,
    dense_writes_pmax: bool,
}

/// What a rank's dense levels did so far: its first failure (kept until the levels' end, where
/// the ranks meet), and a hash of the levels' reports.
#[derive(Default)]
struct DenseRun {
    failure: Option<PcError>,
    reports: u64,
}

const MAGIC: u8 = 0xA7;
const STATUS_OK: u8 = 0;
const STATUS_FAILED: u8 = 1;
const STATUS_INTERRUPTED: u8 = 2;
/// magic, status, level (u32), edges, tests, plan hash, this rank's slices and edges (u64 each),
/// its seconds on them (f64)
const HEADER: usize = 2 + 4 + 8 * 6;

/// Slices a rank is dealt per level (fewer where the level has fewer edges): enough that the
/// drift of early successes along the plan averages out between the ranks, few enough that the
/// rows a slice boundary splits between two ranks (whose sets both then enumerate, on a GPU) stay
/// a negligible share.
pub const SLICES_PER_RANK: usize = 16;

impl<'t, B: Backend> Ranks<'t, B> {
    pub fn new(local: B, transport: &'t mut dyn Transport) -> Result<Self> {
        if transport.size() == 0 || transport.rank() >= transport.size() {
            return Err(PcError::invalid("cluster", format!("rank {} of {} ranks does not exist", transport.rank(), transport.size())));
        }
        Ok(Ranks {
            local,
            transport,
            levels: Vec::new(),
            fail_at_level: None,
            dense_every_rank: false,
            perturb_dense: false,
            slices_per_rank: SLICES_PER_RANK,
            rows: RowsMode::Auto,
            moving: true,
            edges_move: true,
            threads: 1,
            pending: None,
            dense_ran: false,
            dense_check_seconds: 0.0,
            dense: DenseRun::default(),
            dense_writes_pmax: false,
        })
    }

    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    pub fn size(&self) -> usize {
        self.transport.size()
    }
}

const START: u8 = 0xA6;

/// Whether the ranks split "stable" levels >= 2 by rows (`rows.rs`) rather than by edges:
/// where the backend says it pays (a GPU's set kernels), always (the CPU twin, for tests), or
/// never (for comparisons). `GPUPC_RANK_ROWS` = 1 / 0 in R.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowsMode {
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether `backend`'s rank splits its levels by rows under `mode`.
pub fn rows_wanted(backend: &mut dyn Backend, mode: RowsMode) -> bool {
    mode != RowsMode::Never && backend.row_split().is_some_and(|r| mode == RowsMode::Always || r.pays())
}

/// The dense levels' engine of a backend for `order`, if it runs them (see
/// [`DenseLevels::dense_kind`]), and whether its levels >= 2 split by rows under `rows`: ranks
/// that agree on this run levels 0-1 each and split the others alike.
pub fn dense_kind(backend: &mut dyn Backend, order: Order, rows: RowsMode) -> Option<String> {
    let by_rows = rows_wanted(backend, rows);
    backend.dense().filter(|d| d.dense_order_ok(order)).map(|d| if by_rows { format!("{}; levels >= 2 by rows", d.dense_kind()) } else { d.dense_kind() })
}

/// The ranks' first exchange of a search, before its first level: every rank says whether it got
/// there (`failure`: why not: reading its data, opening its GPU, its memory), so that a rank that
/// stops early does not leave the others waiting in the first level's exchange. Returns `failure`
/// on the rank that failed, and on every other rank the error of the lowest rank that failed.
/// Each rank also names its dense levels' engine (`dense`, from [`dense_kind`]) and whether its
/// backend's levels split by edges may move between the ranks (`moves`: not where it runs a
/// level best in one call, [`Backend::whole_levels`]); the answer is the same on every rank:
/// whether all of them named the same engine, and whether all let their slices move.
pub fn start_search(transport: &mut dyn Transport, failure: Option<PcError>, dense: Option<&str>, moves: bool) -> Result<Start> {
    let mut msg = vec![START, failure.is_some() as u8];
    let flags = if moves { START_MOVES } else { 0 };
    match (&failure, dense) {
        (Some(e), _) => msg.extend_from_slice(e.to_string().as_bytes()),
        (None, Some(kind)) => {
            msg.push(START_DENSE | flags);
            msg.extend_from_slice(kind.as_bytes());
        }
        (None, None) => msg.push(flags),
    }
    let all = transport.allgather(&msg)?;
    if let Some(e) = failure {
        return Err(e);
    }
    let mut kinds = Vec::with_capacity(all.len());
    let mut every_moves = true;
    for (r, m) in all.iter().enumerate() {
        match m.as_slice() {
            [START, 0, f, kind @ ..] if f & !(START_DENSE | START_MOVES) == 0 && (f & START_DENSE != 0 || kind.is_empty()) => {
                kinds.push((f & START_DENSE != 0).then_some(kind));
                every_moves &= f & START_MOVES != 0;
            }
            [START, 1, text @ ..] => return Err(PcError::OnRank { rank: r, message: String::from_utf8_lossy(text).into_owned() }),
            _ => return Err(PcError::Internal(format!("rank {r} is at another step of the search ({} bytes where the search's start was due)", m.len()))),
        }
    }
    Ok(Start { dense_every_rank: kinds.first().is_some_and(|k| k.is_some() && kinds.iter().all(|o| o == k)), edges_move: every_moves })
}

/// What the ranks agreed at the search's start ([`start_search`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// Every rank's dense engine is of one kind: each runs levels 0 and 1 whole.
    pub dense_every_rank: bool,
    /// Every rank's backend lets the slices of a level split by edges move as the ranks run.
    pub edges_move: bool,
}

/// The start message's flags: the rank names a dense engine; its slices split by edges may move.
const START_DENSE: u8 = 1;
const START_MOVES: u8 = 2;

/// The slices of a level, in plan order, of about equal test counts; slice k is rank
/// k % size's. Fewer edges than slices give one edge a slice (and the last ranks none).
pub fn rank_slices(plan: &LevelPlan, size: usize, per_rank: usize) -> Vec<Range<usize>> {
    let weights: Vec<u64> = plan.edges.iter().map(|e| e.n_tests().max(1)).collect();
    weighted_blocks(&weights, per_rank.max(1) * size.max(1))
}

/// Rank `rank`'s slices of `slices`.
fn slices_of(slices: &[Range<usize>], rank: usize, size: usize) -> impl Iterator<Item = &Range<usize>> {
    slices.iter().skip(rank).step_by(size.max(1))
}

/// A level's fingerprint: (level, edges, tests, hash of every edge's pair and sides).
fn fingerprint(plan: &LevelPlan) -> (u32, u64, u64, u64) {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    let mut mix = |v: u64| h = (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(31);
    for e in &plan.edges {
        mix(((e.i as u64) << 32) | e.j as u64);
        for s in &e.sides {
            mix(s.map_or(u64::MAX, |s| s.n_ranks ^ ((s.len as u64) << 48)));
        }
    }
    (plan.level as u32, plan.edges.len() as u64, plan.total_tests(), h)
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn header(plan: &LevelPlan, status: u8, slices: usize, local_edges: usize, seconds: f64) -> Vec<u8> {
    let (level, edges, tests, hash) = fingerprint(plan);
    let mut out = Vec::with_capacity(HEADER + local_edges * 10);
    out.push(MAGIC);
    out.push(status);
    out.extend_from_slice(&level.to_le_bytes());
    for v in [edges, tests, hash, slices as u64, local_edges as u64, seconds.to_bits()] {
        put_u64(&mut out, v);
    }
    out
}

/// Outcomes as bytes: per edge a tag (bit 0: a success, bit 1: on side 1, bit 2: no failure
/// before it, so max_fail is -Inf and left out), then for a success its rank (LEB128) and raw
/// p-value, then max_fail. A p-value travels as its bits (NaN stays the same NaN). Without a
/// success `p_best` is not sent: the level loop never reads it then.
pub fn encode_outcomes(outcomes: &[EdgeOutcome], out: &mut Vec<u8>) {
    for o in outcomes {
        let no_fail = o.max_fail == f64::NEG_INFINITY;
        let tag = o.best.map_or(0, |(side, _)| 1 | ((side & 1) << 1)) | ((no_fail as u8) << 2);
        out.push(tag);
        if let Some((_, mut rank)) = o.best {
            loop {
                let byte = (rank & 0x7f) as u8;
                rank >>= 7;
                if rank == 0 {
                    out.push(byte);
                    break;
                }
                out.push(byte | 0x80);
            }
            out.extend_from_slice(&o.p_best.to_bits().to_le_bytes());
        }
        if !no_fail {
            out.extend_from_slice(&o.max_fail.to_bits().to_le_bytes());
        }
    }
}

/// The inverse of [`encode_outcomes`], appending `n` outcomes to `out`.
pub fn decode_outcomes(bytes: &[u8], n: usize, out: &mut Vec<EdgeOutcome>) -> Result<()> {
    let bad = || PcError::Internal("a rank's outcomes are cut short or malformed".into());
    let mut at = 0usize;
    let f64_at = |at: &mut usize| -> Result<f64> {
        let b = bytes.get(*at..*at + 8).ok_or_else(bad)?;
        *at += 8;
        Ok(f64::from_bits(u64::from_le_bytes(b.try_into().map_err(|_| bad())?)))
    };
    for _ in 0..n {
        let tag = *bytes.get(at).ok_or_else(bad)?;
        at += 1;
        if tag & !0b111 != 0 {
            return Err(bad());
        }
        let mut o = EdgeOutcome::NONE;
        if tag & 1 != 0 {
            let mut rank = 0u64;
            let mut shift = 0u32;
            loop {
                let byte = *bytes.get(at).ok_or_else(bad)?;
                at += 1;
                if shift > 63 {
                    return Err(bad());
                }
                rank |= ((byte & 0x7f) as u64) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            o.best = Some(((tag >> 1) & 1, rank));
            o.p_best = f64_at(&mut at)?;
        }
        if tag & 0b100 == 0 {
            o.max_fail = f64_at(&mut at)?;
        }
        out.push(o);
    }
    if at != bytes.len() {
        return Err(bad());
    }
    Ok(())
}

struct Message<'a> {
    status: u8,
    fingerprint: (u32, u64, u64, u64),
    /// The sender's slices and their edges.
    slices: usize,
    edges: usize,
    seconds: f64,
    body: &'a [u8],
}

fn parse(bytes: &[u8], rank: usize) -> Result<Message<'_>> {
    if bytes.len() < HEADER || bytes[0] != MAGIC {
        return Err(PcError::Internal(format!("rank {rank} is at another step of the search ({} bytes where a level's outcomes were due)", bytes.len())));
    }
    let u64_at = |k: usize| u64::from_le_bytes(bytes[6 + 8 * k..14 + 8 * k].try_into().unwrap_or([0; 8]));
    let level = u32::from_le_bytes(bytes[2..6].try_into().unwrap_or([0; 4]));
    Ok(Message {
        status: bytes[1],
        fingerprint: (level, u64_at(0), u64_at(1), u64_at(2)),
        slices: u64_at(3) as usize,
        edges: u64_at(4) as usize,
        seconds: f64::from_bits(u64_at(5)),
        body: &bytes[HEADER..],
    })
}

/// The level's outcomes in plan order from every rank's message (`msgs`, parsed): rank r ran the
/// slices `queues[r]` in that order and sent their outcomes (this rank's are `own`, as computed:
/// the same bits as its bytes). Returns them with the bytes read from the other ranks.
fn place_outcomes(plan: &LevelPlan, slices: &[Range<usize>], queues: &[Vec<usize>], rank: usize, own: &[EdgeOutcome], msgs: &[Message]) -> Result<(Vec<EdgeOutcome>, u64)> {
    let mut out = crate::mem::try_vec::<EdgeOutcome>(plan.edges.len(), "p", "the level's outcomes")?;
    out.resize(plan.edges.len(), EdgeOutcome::NONE);
    let mut received = 0u64;
    for (r, (m, queue)) in msgs.iter().zip(queues).enumerate() {
        let want_edges: usize = queue.iter().map(|&k| slices[k].len()).sum();
        if (m.slices, m.edges) != (queue.len(), want_edges) {
            return Err(PcError::Internal(format!("rank {r} ran {} slices of {} edges of the level, not {} of {want_edges}", m.slices, m.edges, queue.len())));
        }
        let decoded;
        let theirs: &[EdgeOutcome] = if r == rank {
            own
        } else {
            received += (HEADER + m.body.len()) as u64;
            let mut o = crate::mem::try_vec::<EdgeOutcome>(m.edges, "p", "a rank's outcomes")?;
            decode_outcomes(m.body, m.edges, &mut o)?;
            decoded = o;
            &decoded
        };
        let mut at = 0;
        for &k in queue {
            let s = slices[k].clone();
            out[s.clone()].copy_from_slice(&theirs[at..at + s.len()]);
            at += s.len();
        }
    }
    Ok((out, received))
}

impl<B: Backend> Backend for Ranks<'_, B> {
    fn name(&self) -> String {
        format!("{} (rank {} of {})", self.local.name(), self.rank(), self.size())
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        if self.by_rows(plan) {
            return self.run_rows(plan, watch);
        }
        if self.moving && self.edges_move && self.size() > 1 {
            return self.run_dealt(plan, watch);
        }
        let (rank, size) = (self.rank(), self.size());
        let slices = rank_slices(plan, size, self.slices_per_rank);
        let my_slices = slices_of(&slices, rank, size).count();
        let mine: usize = slices_of(&slices, rank, size).map(|s| s.len()).sum();
        let t0 = Instant::now();
        let mut prepare_seconds = 0.0;
        let local = if let Some(e) = self.pending.take() {
            Err(e)
        } else if self.fail_at_level == Some(plan.level) {
            Err(PcError::Internal(format!("a failure injected at level {} for the tests", plan.level)))
        } else if mine == 0 {
            Ok(Vec::new())
        } else if mine == plan.edges.len() {
            self.local.run_level(plan, watch)
        } else {
            let mut edges = crate::mem::try_vec(mine, "p", "this rank's edges of the level")?;
            for s in slices_of(&slices, rank, size) {
                edges.extend_from_slice(&plan.edges[s.clone()]);
            }
            let sub = plan.with_edges(edges);
            prepare_seconds = t0.elapsed().as_secs_f64();
            self.local.run_level(&sub, watch)
        };
        let local = local.and_then(|o| {
            if o.len() == mine {
                Ok(o)
            } else {
                Err(PcError::Internal(format!("the local backend returned {} outcomes for {} edges", o.len(), mine)))
            }
        });
        let local_seconds = t0.elapsed().as_secs_f64();
        let msg = match &local {
            Ok(o) => {
                let mut m = header(plan, STATUS_OK, my_slices, mine, local_seconds);
                encode_outcomes(o, &mut m);
                m
            }
            Err(e) => {
                let status = if matches!(e, PcError::Interrupted) { STATUS_INTERRUPTED } else { STATUS_FAILED };
                let mut m = header(plan, status, my_slices, mine, local_seconds);
                m.extend_from_slice(e.to_string().as_bytes());
                m
            }
        };
        // one rank: its own error as it is (a GPU failure under backend = "auto" then reruns the
        // search on the CPU, as a plain call does; with several ranks it cannot, the others
        // having stopped)
        let local = match local {
            Err(e) if size == 1 => return Err(e),
            other => other,
        };
        let t1 = Instant::now();
        let all = self.transport.allgather(&msg)?;
        let collective_seconds = t1.elapsed().as_secs_f64();
        if all.len() != size {
            return Err(PcError::Internal(format!("the exchange returned {} messages for {size} ranks", all.len())));
        }
        let msgs = all.iter().enumerate().map(|(r, m)| parse(m, r)).collect::<Result<Vec<_>>>()?;
        let secs = msgs.iter().map(|m| m.seconds);
        self.levels.push(RankLevel {
            level: plan.level,
            edges: plan.edges.len(),
            local_edges: mine,
            bytes_sent: msg.len() as u64,
            bytes_received: all.iter().enumerate().filter(|(r, _)| *r != rank).map(|(_, m)| m.len() as u64).sum(),
            local_seconds,
            collective_seconds,
            slowest_seconds: secs.clone().fold(0.0, f64::max),
            fastest_seconds: secs.fold(f64::INFINITY, f64::min),
            exchanges: 1,
            by_rows: false,
            prepare_seconds,
            finish_seconds: 0.0,
            slices_taken: 0,
        });
        // the same decision on every rank: the lowest rank that failed, else the lowest whose plan
        // differs from rank 0's
        if let Some((r, m)) = msgs.iter().enumerate().find(|(_, m)| m.status != STATUS_OK) {
            if matches!(local, Err(PcError::Interrupted)) {
                return Err(PcError::Interrupted);
            }
            let text = String::from_utf8_lossy(m.body).into_owned();
            return Err(PcError::OnRank { rank: r, message: if m.status == STATUS_INTERRUPTED { format!("{text} there") } else { text } });
        }
        if let Some((r, m)) = msgs.iter().enumerate().find(|(_, m)| m.fingerprint != msgs[0].fingerprint) {
            let (l0, e0, t0, _) = msgs[0].fingerprint;
            let (l, e, t, _) = m.fingerprint;
            return Err(PcError::invalid(
                "cluster",
                format!("rank {r} planned level {l} with {e} edges and {t} tests, rank 0 level {l0} with {e0} edges and {t0} tests: the ranks' calls differ (every rank must make the same call on the same data)"),
            ));
        }
        // every rank's outcomes in the order of its slices, then dealt back into plan order
        let t2 = Instant::now();
        let own = local.as_ref().map_err(|_| PcError::Internal("a failed rank's slices were not reported".into()))?;
        let (out, _) = place_outcomes(plan, &slices, &Deal::new(slices.len(), size, false).queues, rank, own, &msgs)?;
        if let Some(l) = self.levels.last_mut() {
            l.finish_seconds = t2.elapsed().as_secs_f64();
        }
        Ok(out)
    }

    /// Levels 0 and 1 whole on this rank's own engine when every rank's is of one kind (else they
    /// are planned, split and exchanged like the others).
    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        if self.dense_every_rank {
            // read here: writes_whole_pmax() has only &self, and the local engine's dense() &mut
            let Some(d) = self.local.dense() else { return None };
            self.dense_writes_pmax = d.writes_whole_pmax();
            Some(self)
        } else {
            None
        }
    }
}

const ROWS: u8 = 0xA9;
const ROWS_END: u8 = 0xAA;
/// magic, status, flags (bit 0: this rank is idle, bit 1: its slices move), level (u32), edges,
/// tests, plan hash, deltas, the slices of its queue it took, the level's slices, the
/// milliseconds until it expects to run out of granted slices and those a slice took it (u64
/// each; `u64::MAX`: unknown)
const ROWS_HEADER: usize = 3 + 4 + 8 * 8;
const ROWS_IDLE: u8 = 1;
const ROWS_MOVING: u8 = 2;
/// magic, status, seconds, tests, fallbacks, entries (u64 each), then per edge whose tests ran
/// on this rank its index (u32) and largest failure's word (u64): each edge's sides run on at
/// most two ranks, so every rank receives at most 24 bytes an edge in all, whatever the ranks
const ROWS_END_HEADER: usize = 2 + 8 * 4;

/// How often the ranks of a level split by rows exchange the keys found since their last
/// exchange, in milliseconds (`GPUPC_RANK_EXCHANGE_MS`; each exchange is a collective that waits
/// for every rank, and carries 12 bytes per new key).
const ROW_EXCHANGE_MS: u64 = 10;

fn row_exchange_every() -> std::time::Duration {
    let ms = std::env::var("GPUPC_RANK_EXCHANGE_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(ROW_EXCHANGE_MS);
    std::time::Duration::from_millis(ms)
}

/// The longest a busy rank of a level split by edges goes without exchanging, in milliseconds:
/// how late it learns that another rank failed, and how long an idle rank may wait for a grant.
const DEALT_EXCHANGE_MAX_MS: u64 = 500;

/// When the busy ranks of a level split by edges exchange next, the same on every rank (they read
/// the same reports): at half the soonest time a busy rank expects to run out of granted slices
/// (`soonest_ms`), between `floor` and [`DEALT_EXCHANGE_MAX_MS`]. An exchange is a collective, so
/// each one costs every rank the others' lateness: at every 100 ms watch tick, CMI-kNN's level 1
/// on two H200s' ranks spent 2.8 s of 40 s in 403 exchanges, where the deal needs them only as a
/// rank nears its grant's end.
fn dealt_every(soonest_ms: u64, floor: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis((soonest_ms / 2).min(DEALT_EXCHANGE_MAX_MS)).max(floor)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)
}

fn rows_message(plan: &LevelPlan, status: u8, flags: u8, (report, slices): (&Report, usize), deltas: &[(u32, u64)], error: Option<&str>) -> Vec<u8> {
    let (level, edges, tests, hash) = fingerprint(plan);
    let mut m = Vec::with_capacity(ROWS_HEADER + deltas.len() * 12);
    m.extend_from_slice(&[ROWS, status, flags]);
    m.extend_from_slice(&level.to_le_bytes());
    let known = |v: Option<u64>| v.unwrap_or(u64::MAX);
    for v in [edges, tests, hash, deltas.len() as u64, report.claimed as u64, slices as u64, known(report.eta_ms), known(report.slice_ms)] {
        put_u64(&mut m, v);
    }
    match error {
        Some(e) => m.extend_from_slice(e.as_bytes()),
        None => {
            for &(k, key) in deltas {
                m.extend_from_slice(&k.to_le_bytes());
                put_u64(&mut m, key);
            }
        }
    }
    m
}

/// A level split by edges whose slices move ([`Ranks::run_dealt`]): the deal, what this rank took
/// of its queue, and the exchanges so far. The backend runs a batch on R's thread (its watch must
/// be ticked there), so a busy rank exchanges from its watch's ticks ([`TickExchange`]) and an
/// idle one between batches.
struct Dealt<'t> {
    transport: &'t mut dyn Transport,
    rank: usize,
    fp: (u32, u64, u64, u64),
    slices: usize,
    deal: Deal,
    claimed: usize,
    /// The lowest rank that failed (its status, its error), once an exchange said so.
    failed: Option<(usize, u8, String)>,
    /// An exchange that could not be made or read.
    broken: Option<PcError>,
    done: bool,
    last: Instant,
    /// When the next exchange of a busy rank is due after the last ([`dealt_every`]).
    every: std::time::Duration,
    floor: std::time::Duration,
    batch: Running,
    /// The slices this rank ran in the level's earlier batches, and the seconds they took.
    ran: (usize, f64),
    exchanges: u64,
    sent: u64,
    received: u64,
    collective_s: f64,
}

/// A rank's running batch of a level split by edges: its start, its slices, and its edges decided
/// and in all at the watch's last tick.
#[derive(Clone, Copy)]
struct Running {
    start: Instant,
    slices: usize,
    done: u64,
    total: u64,
}

impl Running {
    fn new(slices: usize, total: u64) -> Self {
        Running { start: Instant::now(), slices, done: 0, total }
    }
}

impl Dealt<'_> {
    /// The milliseconds a slice took this rank in the level's earlier batches.
    fn slice_ms(&self) -> Option<u64> {
        let (slices, secs) = self.ran;
        (slices > 0).then(|| (secs * 1e3 / slices as f64) as u64)
    }

    /// Milliseconds until this rank expects to have run its granted slices: none when idle; else
    /// from its earlier batches' time a slice, or in its first batch from the edges decided so far
    /// (unknown while none is).
    fn eta_ms(&self, idle: bool) -> Option<u64> {
        if idle {
            return Some(0);
        }
        let Running { start, slices, done, total } = self.batch;
        let ran = start.elapsed().as_secs_f64() * 1e3;
        match self.slice_ms() {
            Some(ms) => Some(((ms * slices as u64) as f64 - ran).max(0.0) as u64),
            None if done > 0 => Some((ran * total.saturating_sub(done) as f64 / done as f64) as u64),
            None => None,
        }
    }

    /// The level as this rank saw it so far (the ranks' extremes and the outcomes' seconds are
    /// filled in once the outcomes are exchanged).
    fn record(&self, plan: &LevelPlan, local_edges: usize, local_s: f64, prepare_s: f64) -> RankLevel {
        RankLevel {
            level: plan.level,
            edges: plan.edges.len(),
            local_edges,
            bytes_sent: self.sent,
            bytes_received: self.received,
            local_seconds: local_s,
            collective_seconds: self.collective_s,
            slowest_seconds: local_s,
            fastest_seconds: local_s,
            exchanges: self.exchanges,
            by_rows: false,
            prepare_seconds: prepare_s.min(local_s),
            finish_seconds: 0.0,
            slices_taken: self.deal.taken[self.rank] as u64,
        }
    }

    /// One exchange: this rank's report (or its failure) out, every rank's in; the deal updated
    /// alike on every rank unless the level ended there.
    fn exchange(&mut self, plan: &LevelPlan, idle: bool, failure: Option<&PcError>) -> Result<()> {
        let (status, text) = match failure {
            Some(PcError::Interrupted) => (STATUS_INTERRUPTED, Some(PcError::Interrupted.to_string())),
            Some(e) => (STATUS_FAILED, Some(e.to_string())),
            None => (STATUS_OK, None),
        };
        let flags = if idle { ROWS_IDLE } else { 0 } | ROWS_MOVING;
        let report = Report { claimed: self.claimed, idle, eta_ms: self.eta_ms(idle), slice_ms: self.slice_ms() };
        let msg = rows_message(plan, status, flags, (&report, self.slices), &[], text.as_deref());
        let t = Instant::now();
        let all = self.transport.allgather(&msg)?;
        self.collective_s += t.elapsed().as_secs_f64();
        self.last = Instant::now();
        self.exchanges += 1;
        self.sent += msg.len() as u64;
        if all.len() != self.deal.queues.len() {
            return Err(PcError::Internal(format!("the exchange returned {} messages for {} ranks", all.len(), self.deal.queues.len())));
        }
        let got = read_progress(&all, self.rank, self.fp, Some(self.slices), true)?;
        self.received += got.received;
        if let Some((r, _)) = got.keys.iter().find(|(_, k)| !k.is_empty()) {
            return Err(PcError::Internal(format!("rank {r} sent keys in a level split by edges")));
        }
        if got.failed.is_some() {
            self.failed = got.failed;
        } else if self.deal.done(&got.reports) {
            self.done = true;
        } else {
            self.deal.update(&got.reports)?;
            // a busy rank ends when it said; an idle one just granted slices when they have run
            // at its pace (at once if it has none yet); an idle one granted nothing waits for
            // the others' ends, since no exchange sooner would give it anything
            let deal = &self.deal;
            let ends = got.reports.iter().enumerate().filter_map(|(r, rep)| match (rep.idle, deal.granted[r] - rep.claimed) {
                (false, _) => rep.eta_ms,
                (true, 0) => None,
                (true, new) => Some(rep.slice_ms.map_or(0, |ms| ms.saturating_mul(new as u64))),
            });
            let soonest = ends.min();
            self.every = dealt_every(soonest.unwrap_or(u64::MAX), self.floor);
        }
        Ok(())
    }
}

/// The watch of a batch: the call's watch, and an exchange of this (busy) rank's progress when
/// one is due ([`dealt_every`]); a failure elsewhere, or a broken exchange, stops the batch.
struct TickExchange<'a, 'b, 't> {
    inner: &'a mut dyn Watch,
    dealt: &'b mut Dealt<'t>,
    plan: &'a LevelPlan,
}

impl Watch for TickExchange<'_, '_, '_> {
    fn tick(&mut self, edges_done: u64, edges_total: u64) -> bool {
        let go_on = self.inner.tick(edges_done, edges_total);
        (self.dealt.batch.done, self.dealt.batch.total) = (edges_done, edges_total);
        go_on && self.exchange_due()
    }

    fn keep_going(&mut self) -> bool {
        let go_on = self.inner.keep_going();
        go_on && self.exchange_due()
    }
}

impl TickExchange<'_, '_, '_> {
    fn exchange_due(&mut self) -> bool {
        let d = &mut *self.dealt;
        if d.broken.is_none() && d.failed.is_none() && d.last.elapsed() >= d.every {
            if let Err(e) = d.exchange(self.plan, false, None) {
                d.broken = Some(e);
            }
        }
        d.broken.is_none() && d.failed.is_none()
    }
}

/// One exchange of a level whose slices move, as every rank read it: the ranks' reports (of
/// those that did not fail), the lowest rank that failed (its status and error), and the keys
/// each other rank sent (a level split by rows; none by edges).
struct Progress<'m> {
    reports: Vec<Report>,
    failed: Option<(usize, u8, String)>,
    keys: Vec<(usize, &'m [u8])>,
    received: u64,
}

/// Reads the messages of one exchange ([`rows_message`]'s) of a level with fingerprint `fp`, cut
/// into `slices` (None where this rank failed before cutting it, and cannot check).
fn read_progress<'m>(all: &'m [Vec<u8>], rank: usize, fp: (u32, u64, u64, u64), slices: Option<usize>, moving: bool) -> Result<Progress<'m>> {
    let mut got = Progress { reports: Vec::with_capacity(all.len()), failed: None, keys: Vec::new(), received: 0 };
    let fingerprint_of = |m: &[u8]| (u32::from_le_bytes(m[3..7].try_into().unwrap_or([0; 4])), u64_at(m, 7), u64_at(m, 15), u64_at(m, 23));
    for (r, m) in all.iter().enumerate() {
        if m.len() < ROWS_HEADER || m[0] != ROWS {
            return Err(PcError::Internal(format!("rank {r} is at another step of the search ({} bytes where a level's progress was due)", m.len())));
        }
    }
    // every rank compared with the first that did not fail, so that all make the same decision
    let first_ok = all.iter().position(|m| m[1] == STATUS_OK);
    let (r0, fp0) = first_ok.map_or((rank, fp), |r| (r, fingerprint_of(&all[r])));
    for (r, m) in all.iter().enumerate() {
        if r != rank {
            got.received += m.len() as u64;
        }
        if m[1] != STATUS_OK {
            if got.failed.is_none() {
                got.failed = Some((r, m[1], String::from_utf8_lossy(&m[ROWS_HEADER..]).into_owned()));
            }
            continue;
        }
        let theirs = fingerprint_of(m);
        if theirs != fp0 {
            let (l, e, t, _) = theirs;
            return Err(PcError::invalid(
                "cluster",
                format!("rank {r} planned level {l} with {e} edges and {t} tests, rank {r0} level {} with {} edges and {} tests: the ranks' calls differ (every rank must make the same call on the same data)", fp0.0, fp0.1, fp0.2),
            ));
        }
        let how = |moves: bool| if moves { " that move" } else { " that stay" };
        if let Some(n) = slices.filter(|&n| u64_at(m, 47) as usize != n || (m[2] & ROWS_MOVING != 0) != moving) {
            return Err(PcError::invalid(
                "cluster",
                format!("rank {r} cut level {} into {} slices{}, rank {rank} into {n}{}: the ranks' settings differ (GPUPC_RANK_SLICES and GPUPC_RANK_MOVE must be the same on every rank)",
                    fp.0, u64_at(m, 47), how(m[2] & ROWS_MOVING != 0), how(moving)),
            ));
        }
        let known = |v: u64| (v != u64::MAX).then_some(v);
        got.reports.push(Report { claimed: u64_at(m, 39) as usize, idle: m[2] & ROWS_IDLE != 0, eta_ms: known(u64_at(m, 55)), slice_ms: known(u64_at(m, 63)) });
        let n = u64_at(m, 31) as usize;
        if m.len() != ROWS_HEADER + 12 * n {
            return Err(PcError::Internal(format!("rank {r}'s keys are cut short or malformed")));
        }
        if r != rank {
            got.keys.push((r, &m[ROWS_HEADER..]));
        }
    }
    Ok(got)
}

impl<B: Backend> Ranks<'_, B> {
    /// A level split by edges whose slices move ([`Deal`]): the plan's slices as the static split
    /// cuts them ([`rank_slices`]), each rank running its granted slices a batch at a time on its
    /// backend, exchanging its progress while it runs (from the batch's watch, as often as
    /// [`dealt_every`] says) and at once when idle, until every slice has run; then one exchange of the outcomes,
    /// each rank's for the slices of its final queue, in that order.
    fn run_dealt(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let (rank, size) = (self.rank(), self.size());
        let slices = rank_slices(plan, size, self.slices_per_rank);
        let t0 = Instant::now();
        let mut failure = self.pending.take().or_else(|| {
            (self.fail_at_level == Some(plan.level)).then(|| PcError::Internal(format!("a failure injected at level {} for the tests", plan.level)))
        });
        let mut d = Dealt {
            transport: &mut *self.transport,
            rank,
            fp: fingerprint(plan),
            slices: slices.len(),
            deal: Deal::new(slices.len(), size, true),
            claimed: 0,
            failed: None,
            broken: None,
            done: false,
            last: Instant::now(),
            every: row_exchange_every().max(std::time::Duration::from_millis(100)),
            floor: row_exchange_every(),
            batch: Running::new(0, 0),
            ran: (0, 0.0),
            exchanges: 0,
            sent: 0,
            received: 0,
            collective_s: 0.0,
        };
        // this rank's outcomes, slice after slice of its queue as it ran them
        let mut mine: Vec<EdgeOutcome> = Vec::new();
        let mut local_s = 0.0;
        let mut prepare_s = 0.0;
        loop {
            if failure.is_none() && d.claimed < d.deal.granted[rank] {
                let t = Instant::now();
                let batch: Vec<usize> = d.deal.queues[rank][d.claimed..d.deal.granted[rank]].to_vec();
                d.claimed = d.deal.granted[rank];
                let n: usize = batch.iter().map(|&k| slices[k].len()).sum();
                let mut edges = crate::mem::try_vec(n, "p", "this rank's edges of the level")?;
                for &k in &batch {
                    edges.extend_from_slice(&plan.edges[slices[k].clone()]);
                }
                let sub = plan.with_edges(edges);
                prepare_s += t.elapsed().as_secs_f64();
                d.batch = Running::new(batch.len(), n as u64);
                let waited = d.collective_s;
                let r = self.local.run_level(&sub, &mut TickExchange { inner: &mut *watch, dealt: &mut d, plan });
                if let Some(e) = d.broken.take() {
                    return Err(e);
                }
                // the batch's own time, without its exchanges
                d.ran.0 += batch.len();
                d.ran.1 += (d.batch.start.elapsed().as_secs_f64() - (d.collective_s - waited)).max(0.0);
                match r {
                    Ok(o) if o.len() == n && mine.is_empty() => mine = o,
                    Ok(o) if o.len() == n => {
                        mine.try_reserve(n).map_err(|_| crate::mem::out_of_memory("p", "this rank's outcomes of the level", crate::mem::bytes_of::<EdgeOutcome>(mine.len() + n)))?;
                        mine.extend(o);
                    }
                    Ok(o) => failure = Some(PcError::Internal(format!("the local backend returned {} outcomes for {n} edges", o.len()))),
                    // stopped because another rank failed: that rank's error follows
                    Err(_) if d.failed.is_some() => {}
                    Err(e) => failure = Some(e),
                }
                local_s = t0.elapsed().as_secs_f64();
                if d.failed.is_none() {
                    continue;
                }
            }
            if d.failed.is_none() {
                d.exchange(plan, true, failure.as_ref())?;
            }
            if let Some((r, status, text)) = d.failed.take() {
                // the level as far as it went, as the static split records it
                self.levels.push(d.record(plan, mine.len(), local_s, prepare_s));
                if matches!(failure, Some(PcError::Interrupted)) {
                    return Err(PcError::Interrupted);
                }
                return Err(PcError::OnRank { rank: r, message: if status == STATUS_INTERRUPTED { format!("{text} there") } else { text } });
            }
            if d.done {
                break;
            }
        }
        // the outcomes: every rank's final queue is the same on every rank
        let mut msg = header(plan, STATUS_OK, d.deal.queues[rank].len(), mine.len(), local_s);
        encode_outcomes(&mine, &mut msg);
        let t1 = Instant::now();
        let all = d.transport.allgather(&msg)?;
        d.collective_s += t1.elapsed().as_secs_f64();
        d.exchanges += 1;
        d.sent += msg.len() as u64;
        if all.len() != size {
            return Err(PcError::Internal(format!("the exchange returned {} messages for {size} ranks", all.len())));
        }
        let t2 = Instant::now();
        let msgs = all.iter().enumerate().map(|(r, m)| parse(m, r)).collect::<Result<Vec<_>>>()?;
        if let Some((r, _)) = msgs.iter().enumerate().find(|(_, m)| m.status != STATUS_OK || m.fingerprint != d.fp) {
            return Err(PcError::Internal(format!("rank {r} sent no outcomes of this level after every slice had run")));
        }
        let (out, received) = place_outcomes(plan, &slices, &d.deal.queues, rank, &mine, &msgs)?;
        d.received += received;
        let mut level = d.record(plan, mine.len(), local_s, prepare_s);
        level.slowest_seconds = msgs.iter().map(|m| m.seconds).fold(0.0, f64::max);
        level.fastest_seconds = msgs.iter().map(|m| m.seconds).fold(f64::INFINITY, f64::min);
        level.finish_seconds = t2.elapsed().as_secs_f64();
        self.levels.push(level);
        Ok(out)
    }
}

impl<B: Backend> Ranks<'_, B> {
    /// Whether `plan` runs split by rows: several ranks whose engines agreed on it at the start
    /// ([`dense_kind`]), a "stable" level >= 2 the backend splits so.
    fn by_rows(&mut self, plan: &LevelPlan) -> bool {
        self.size() > 1
            && self.dense_every_rank
            && plan.order == Order::Stable
            && plan.level >= 2
            && plan.edges.len() < u32::MAX as usize
            && rows_wanted(&mut self.local, self.rows)
            && self.local.row_split().is_some_and(|r| r.splits(plan))
    }

    /// A level split by rows (`rows.rs`): the rows cut into slices of about equal work
    /// ([`weighted_blocks`], [`Ranks::slices_per_rank`] per rank), dealt in turn and moved between
    /// the ranks as they run ([`Deal`]); each rank runs its granted slices on a worker thread, while
    /// this thread exchanges with every other rank, every [`ROW_EXCHANGE_MS`], the keys found since
    /// and its progress, until every slice has run; then one exchange of the largest failures of
    /// the edges each rank tested, and every rank computes the level's outcomes from the same
    /// merged keys.
    fn run_rows(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let (rank, size) = (self.rank(), self.size());
        let fp = fingerprint(plan);
        let ne = plan.edges.len();
        let t0 = Instant::now();
        let injected = self.pending.take().or_else(|| {
            (self.fail_at_level == Some(plan.level)).then(|| PcError::Internal(format!("a failure injected at level {} for the tests", plan.level)))
        });
        let per_rank = self.slices_per_rank;
        let moving = self.moving;
        let transport = &mut *self.transport;
        let local = self.local.row_split().ok_or_else(|| PcError::Internal("a row split without a backend that splits rows".into()))?;
        // the level's rows, its board, and the keys this rank sent or learned; a failure here is
        // this rank's, reported at the first exchange like any other
        let (prepared, mut sent, mut outcome) = match injected.map_or_else(
            || {
                let lv = local.row_level(plan)?;
                let board = KeyBoard::new(ne)?;
                let mut sent = crate::mem::try_vec::<u64>(ne, "p", "the level's keys sent")?;
                sent.resize(ne, NO_KEY);
                Ok((lv, board, sent))
            },
            Err,
        ) {
            Ok((lv, board, sent)) => (Some((lv, board)), sent, None),
            Err(e) => (None, Vec::new(), Some(Err(e))),
        };
        let slices: Vec<Range<usize>> = match &prepared {
            Some((lv, _)) => weighted_blocks(lv.weights(), per_rank.max(1) * size),
            None => Vec::new(),
        };
        let mut deal = Deal::new(slices.len(), size, moving);
        let claims = Claims::new(deal.queues[rank].clone(), deal.granted[rank]);
        let prepare_s = t0.elapsed().as_secs_f64();
        let every = row_exchange_every();
        let ctl = Control::default();
        let (mut sent_bytes, mut received_bytes, mut exchanges, mut collective_s) = (0u64, 0u64, 0u64, 0.0f64);
        let mut local_s = 0.0;
        // outcome: this rank's keys (or why not); and the first rank that failed
        let mut other_failed: Option<(usize, u8, String)> = None;
        let watcher = std::thread::current();
        let exchanged: Result<()> = std::thread::scope(|sc| {
            let mut worker = match &prepared {
                Some((lv, board)) => {
                    let (lv, board, ctl, slices, claims, watcher) = (&**lv, board, &ctl, &slices, &claims, watcher.clone());
                    Some(sc.spawn(move || {
                        let run = || -> Result<RowKeys> {
                            let mut acc: Option<RowKeys> = None;
                            while let Some(batch) = claims.next_batch(|| t0.elapsed().as_secs_f64(), || watcher.unpark()) {
                                let rows: Vec<usize> = batch.iter().flat_map(|&k| slices[k].clone()).collect();
                                let k = lv.run(&rows, board, ctl)?;
                                match &mut acc {
                                    Some(a) => a.merge(&k),
                                    None => acc = Some(k),
                                }
                            }
                            acc.map_or_else(|| lv.run(&[], board, ctl), Ok)
                        };
                        let r = run();
                        watcher.unpark();
                        r
                    }))
                }
                None => None,
            };
            let mut deltas: Vec<(u32, u64)> = Vec::new();
            let mut last = Instant::now();
            // an exchange that fails (MPI) ends the level here: the worker is told to stop
            // rather than run its rows to the end first
            let exchanged = (|| -> Result<()> {
                loop {
                    // a busy rank exchanges every `every`; an idle one (waiting for a grant, or
                    // done) as soon as the others are there
                    let busy = || worker.as_ref().is_some_and(|h| !h.is_finished()) && !claims.report().idle;
                    if busy() {
                        let wait = every.saturating_sub(last.elapsed());
                        if !wait.is_zero() {
                            std::thread::park_timeout(wait);
                        }
                        if busy() && last.elapsed() < every {
                            continue;
                        }
                    }
                    if !watch.tick(ctl.edges_done.load(std::sync::atomic::Ordering::Relaxed), ne as u64) {
                        ctl.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    // a worker ends before the level's end only with an error
                    if worker.as_ref().is_some_and(|h| h.is_finished()) {
                        let h = worker.take().expect("a finished worker");
                        outcome = Some(h.join().unwrap_or_else(|e| Err(PcError::Internal(crate::backend::panic_message(&*e)))));
                        local_s = t0.elapsed().as_secs_f64();
                    }
                    // read before the keys are collected, so that an idle rank's message holds
                    // all its keys
                    let report = claims.report();
                    deltas.clear();
                    if let Some((_, board)) = &prepared {
                        for (k, s) in sent.iter_mut().enumerate() {
                            let b = board.get(k);
                            if b < *s {
                                *s = b;
                                deltas.push((k as u32, b));
                            }
                        }
                    }
                    let (status, text) = match &outcome {
                        Some(Err(PcError::Interrupted)) => (STATUS_INTERRUPTED, Some(PcError::Interrupted.to_string())),
                        Some(Err(e)) => (STATUS_FAILED, Some(e.to_string())),
                        _ => (STATUS_OK, None),
                    };
                    let flags = if report.idle { ROWS_IDLE } else { 0 } | if moving { ROWS_MOVING } else { 0 };
                    let msg = rows_message(plan, status, flags, (&report, slices.len()), &deltas, text.as_deref());
                    let t = Instant::now();
                    let all = transport.allgather(&msg)?;
                    collective_s += t.elapsed().as_secs_f64();
                    exchanges += 1;
                    last = Instant::now();
                    sent_bytes += msg.len() as u64;
                    if all.len() != size {
                        return Err(PcError::Internal(format!("the exchange returned {} messages for {size} ranks", all.len())));
                    }
                    let got = read_progress(&all, rank, fp, prepared.is_some().then_some(slices.len()), moving)?;
                    received_bytes += got.received;
                    if other_failed.is_none() {
                        other_failed = got.failed;
                    }
                    if let Some((_, board)) = &prepared {
                        for (r, keys) in got.keys {
                            for d in keys.chunks_exact(12) {
                                let k = u32::from_le_bytes(d[..4].try_into().unwrap_or([0; 4])) as usize;
                                let key = u64_at(d, 4);
                                if k >= ne {
                                    return Err(PcError::Internal(format!("rank {r} sent a key of edge {k} of {ne}")));
                                }
                                board.lower(k, key);
                                // the board holds it now: not this rank's to send again
                                sent[k] = sent[k].min(key);
                            }
                        }
                    }
                    let reports = got.reports;
                    if other_failed.is_some() || deal.done(&reports) {
                        break;
                    }
                    deal.update(&reports)?;
                    claims.set(&deal.queues[rank], deal.granted[rank]);
                }
                Ok(())
            })();
            // done, or stopped by a failure: no more grants, and on a failure the running batch
            // is cut short
            if exchanged.is_err() || other_failed.is_some() {
                ctl.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            claims.close();
            if let Some(h) = worker.take() {
                let r = h.join().unwrap_or_else(|e| Err(PcError::Internal(crate::backend::panic_message(&*e))));
                outcome.get_or_insert(r);
                local_s = if exchanged.is_ok() && other_failed.is_none() { claims.idle_at() } else { t0.elapsed().as_secs_f64() };
            }
            exchanged
        });
        exchanged?;
        let mut level = RankLevel {
            level: plan.level,
            edges: ne,
            local_edges: ne,
            local_seconds: local_s,
            by_rows: true,
            prepare_seconds: prepare_s,
            slices_taken: deal.taken[rank] as u64,
            ..Default::default()
        };
        if let Some((r, status, text)) = other_failed {
            (level.slowest_seconds, level.fastest_seconds) = (local_s, local_s);
            (level.bytes_sent, level.bytes_received, level.collective_seconds, level.exchanges) = (sent_bytes, received_bytes, collective_s, exchanges);
            self.levels.push(level);
            if matches!(outcome, Some(Err(PcError::Interrupted))) {
                return Err(PcError::Interrupted);
            }
            return Err(PcError::OnRank { rank: r, message: if status == STATUS_INTERRUPTED { format!("{text} there") } else { text } });
        }
        let mut keys = match outcome {
            Some(Ok(k)) => k,
            _ => return Err(PcError::Internal("a rank's failure was not reported".into())),
        };
        let Some((lv, board)) = &prepared else { return Err(PcError::Internal("a failed rank ran on".into())) };
        // the board holds every rank's keys now (each sent them all before saying it finished)
        keys.best = board.snapshot();
        let failed = keys.maxfail.iter().filter(|&&w| w != 0).count();
        let mut msg = Vec::with_capacity(ROWS_END_HEADER + 12 * failed);
        msg.extend_from_slice(&[ROWS_END, STATUS_OK]);
        for v in [local_s.to_bits(), keys.tests, keys.fallbacks, failed as u64] {
            put_u64(&mut msg, v);
        }
        for (k, &w) in keys.maxfail.iter().enumerate().filter(|(_, &w)| w != 0) {
            msg.extend_from_slice(&(k as u32).to_le_bytes());
            put_u64(&mut msg, w);
        }
        let t = Instant::now();
        let all = transport.allgather(&msg)?;
        collective_s += t.elapsed().as_secs_f64();
        exchanges += 1;
        sent_bytes += msg.len() as u64;
        let (mut slowest, mut fastest) = (0.0f64, f64::INFINITY);
        for (r, m) in all.iter().enumerate() {
            if m.len() < ROWS_END_HEADER || m[0] != ROWS_END || m.len() != ROWS_END_HEADER + 12 * u64_at(m, 26) as usize {
                return Err(PcError::Internal(format!("rank {r} is at another step of the search ({} bytes where a level's failures were due)", m.len())));
            }
            let secs = f64::from_bits(u64_at(m, 2));
            slowest = slowest.max(secs);
            fastest = fastest.min(secs);
            if r == rank {
                continue;
            }
            received_bytes += m.len() as u64;
            keys.tests += u64_at(m, 10);
            keys.fallbacks += u64_at(m, 18);
            for e in m[ROWS_END_HEADER..].chunks_exact(12) {
                let k = u32::from_le_bytes(e[..4].try_into().unwrap_or([0; 4])) as usize;
                let a = keys.maxfail.get_mut(k).ok_or_else(|| PcError::Internal(format!("rank {r} sent a failure of edge {k} of {ne}")))?;
                *a = (*a).max(u64_at(e, 4));
            }
        }
        (level.slowest_seconds, level.fastest_seconds) = (slowest, fastest);
        (level.bytes_sent, level.bytes_received, level.collective_seconds, level.exchanges) = (sent_bytes, received_bytes, collective_s, exchanges);
        let t = Instant::now();
        let out = lv.outcomes(&keys);
        level.finish_seconds = t.elapsed().as_secs_f64();
        self.levels.push(level);
        let stats = lv.stats();
        drop(prepared);
        if let Some(rs) = self.local.row_split() {
            rs.row_level_done(plan.level, stats, t0.elapsed().as_secs_f64());
        }
        out
    }
}

const DENSE: u8 = 0xA8;

/// A fingerprint of `xs`: each chunk hashed on the pool's threads, the chunks' hashes then
/// folded in order.
fn chunked_hash<T: Sync>(pool: &rayon::ThreadPool, xs: &[T], bits: impl Fn(&T) -> u64 + Sync) -> u64 {
    let hashes: Vec<u64> = pool.install(|| {
        xs.par_chunks(1 << 16)
            .enumerate()
            .map(|(k, c)| {
                let mut h = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x243F_6A88_85A3_08D3;
                for x in c {
                    h = (h ^ bits(x)).wrapping_mul(0xFF51_AFD7_ED55_8CCD).rotate_left(29);
                }
                h
            })
            .collect()
    });
    let mut h = xs.len() as u64;
    for c in hashes {
        h = (h ^ c).wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(31);
    }
    h
}

fn mix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A dense level's report as one word; its level-1 sets in any order (a GPU appends them as its
/// threads finish).
fn report_hash(level: usize, rep: &DenseLevelReport) -> u64 {
    let sets = rep.singles.iter().fold(0u64, |acc, t| acc.wrapping_add(mix64((((t[0] as u64) << 32) | t[1] as u64) ^ mix64(t[2] as u64))));
    let mut h = level as u64;
    for v in [rep.tests, rep.removed as u64, rep.not_done as u64, rep.qualifying, rep.singles.len() as u64, sets] {
        h = mix64(h ^ v).rotate_left(17);
    }
    h
}

impl<B: Backend> Ranks<'_, B> {
    /// Keeps a dense level's failure for the levels' end, where every rank meets (one rank
    /// returns it at once: no one waits for it, and a GPU failure may rerun the search on the CPU).
    fn dense_failed(&mut self, e: PcError) -> Result<()> {
        if self.size() == 1 {
            return Err(e);
        }
        self.dense.failure.get_or_insert(e);
        Ok(())
    }

    /// The ranks' exchange at the dense levels' end: each rank's fingerprint of the graph, pMax,
    /// level 0's sets and the levels' reports, or its failure.
    fn dense_check(&mut self, graph: &Adjacency, pmax: &[f64], sep0: &BitMatrix) -> Result<()> {
        let t0 = Instant::now();
        let failure = self.dense.failure.take();
        let mut msg = vec![DENSE, if failure.is_none() { STATUS_OK } else if matches!(failure, Some(PcError::Interrupted)) { STATUS_INTERRUPTED } else { STATUS_FAILED }];
        match &failure {
            Some(e) => msg.extend_from_slice(e.to_string().as_bytes()),
            None => {
                let pool = crate::threads::call_pool(self.threads, "fingerprint");
                let fp = pool.map(|pool| {
                    let mut h = self.dense.reports ^ graph.p() as u64;
                    for piece in [chunked_hash(&pool, graph.words(), |w| *w), chunked_hash(&pool, pmax, |x| x.to_bits()), chunked_hash(&pool, sep0.words(), |w| *w)] {
                        h = mix64(h ^ piece).rotate_left(23);
                    }
                    h
                });
                match fp {
                    Ok(fp) => {
                        msg.extend_from_slice(&(fp ^ self.perturb_dense as u64).to_le_bytes());
                    }
                    Err(e) => {
                        msg[1] = STATUS_FAILED;
                        msg.extend_from_slice(e.to_string().as_bytes());
                    }
                }
            }
        }
        let all = self.transport.allgather(&msg);
        self.dense_check_seconds += t0.elapsed().as_secs_f64();
        let all = all?;
        if all.len() != self.size() {
            return Err(PcError::Internal(format!("the exchange returned {} messages for {} ranks", all.len(), self.size())));
        }
        for (r, m) in all.iter().enumerate() {
            if m.len() < 2 || m[0] != DENSE {
                return Err(PcError::Internal(format!("rank {r} is at another step of the search ({} bytes where the end of levels 0-1 was due)", m.len())));
            }
        }
        // the same decision on every rank: the lowest rank that failed, else the lowest whose
        // levels differ from rank 0's
        if let Some((r, m)) = all.iter().enumerate().find(|(_, m)| m[1] != STATUS_OK) {
            if matches!(failure, Some(PcError::Interrupted)) {
                return Err(PcError::Interrupted);
            }
            let text = String::from_utf8_lossy(&m[2..]).into_owned();
            return Err(PcError::OnRank { rank: r, message: if m[1] == STATUS_INTERRUPTED { format!("{text} there") } else { text } });
        }
        if let Some(r) = all.iter().position(|m| m[2..] != all[0][2..]) {
            return Err(PcError::invalid(
                "cluster",
                format!("rank {r}'s levels 0-1 differ from rank 0's: its backend rounds differently (ranks run levels 0-1 each on its own where their engines are of one kind); give every rank the same backend"),
            ));
        }
        Ok(())
    }
}

/// The dense levels on this rank's engine, its failures kept for the exchange at their end.
impl<B: Backend> DenseLevels for Ranks<'_, B> {
    /// start_search found that every rank's engine runs them in the search's order.
    fn dense_order_ok(&self, _order: Order) -> bool {
        self.dense_every_rank
    }

    fn dense_kind(&self) -> String {
        String::new()
    }

    fn writes_whole_pmax(&self) -> bool {
        self.dense_writes_pmax
    }

    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()> {
        self.dense = DenseRun::default();
        self.dense_ran = true;
        let r = match self.local.dense() {
            Some(d) => d.dense_begin(order, start, fixed, alpha, na_value),
            None => Err(PcError::Internal("the dense levels went away".into())),
        };
        match r {
            Ok(()) => Ok(()),
            Err(e) => self.dense_failed(e),
        }
    }

    fn dense_level(&mut self, level: usize, pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
        if self.dense.failure.is_some() {
            // nothing more to compute: the levels' end reports the failure on every rank
            return Ok(DenseLevelReport::default());
        }
        let r = match self.local.dense() {
            _ if self.fail_at_level == Some(level) => Err(PcError::Internal(format!("a failure injected at level {level} for the tests"))),
            Some(d) => d.dense_level(level, pmax, sep0, watch),
            None => Err(PcError::Internal("the dense levels went away".into())),
        };
        match r {
            Ok(rep) => {
                self.dense.reports = mix64(self.dense.reports ^ report_hash(level, &rep));
                Ok(rep)
            }
            Err(e) => self.dense_failed(e).map(|_| DenseLevelReport::default()),
        }
    }

    fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<()> {
        if self.dense.failure.is_none() {
            let r = match self.local.dense() {
                Some(d) => d.dense_end(graph, pmax, sep0),
                None => Err(PcError::Internal("the dense levels went away".into())),
            };
            if let Err(e) = r {
                self.dense_failed(e)?;
            }
        }
        if self.size() == 1 {
            return Ok(());
        }
        self.dense_check(graph, pmax, sep0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::NullWatch;
    use crate::citest::CiTest;
    use crate::cpu::ParallelCpu;
    use crate::dense::{DenseCpu, WithDense};
    use crate::skeleton::{run_skeleton, SkeletonParams, SkeletonResult};
    use std::sync::{Arc, Barrier, Mutex};

    /// p-values from a hash of (x, y, S): NaN now and then, many near the usual alphas.
    struct HashTest {
        seed: u64,
    }

    impl CiTest for HashTest {
        type Scratch = ();
        fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> Result<f64> {
            let mut h = self.seed ^ 0x9E37_79B9_7F4A_7C15;
            for v in [x, y].iter().chain(s) {
                h = (h ^ *v as u64).wrapping_mul(0x1000_0000_01B3).rotate_left(29);
            }
            h ^= h >> 33;
            h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
            if h % 23 == 0 {
                return Ok(f64::NAN);
            }
            Ok((h >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    /// k ranks on threads: a shared slot per rank and a barrier on each side of the reads.
    struct Threads {
        rank: usize,
        slots: Arc<Mutex<Vec<Vec<u8>>>>,
        barrier: Arc<Barrier>,
    }

    impl Transport for Threads {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.slots.lock().unwrap().len()
        }
        fn allgather(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
            self.slots.lock().unwrap()[self.rank] = bytes.to_vec();
            self.barrier.wait();
            let all = self.slots.lock().unwrap().clone();
            self.barrier.wait();
            Ok(all)
        }
    }

    fn transports(k: usize) -> Vec<Threads> {
        let slots = Arc::new(Mutex::new(vec![Vec::new(); k]));
        let barrier = Arc::new(Barrier::new(k));
        (0..k).map(|rank| Threads { rank, slots: slots.clone(), barrier: barrier.clone() }).collect()
    }

    fn xorshift(h: &mut u64) -> f64 {
        *h ^= *h << 13;
        *h ^= *h >> 7;
        *h ^= *h << 17;
        (*h >> 11) as f64 / (1u64 << 53) as f64
    }

    fn params(p: usize, seed: u64, order: Order, alpha: f64, m_max: Option<usize>, na_delete: bool) -> SkeletonParams {
        let mut h = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
        let (mut gaps, mut fixed) = (vec![false; p * p], vec![false; p * p]);
        for i in 0..p {
            for j in i + 1..p {
                let g = xorshift(&mut h) < 0.15;
                let f = xorshift(&mut h) < 0.03;
                for (a, b) in [(i, j), (j, i)] {
                    gaps[a * p + b] = g;
                    fixed[a * p + b] = f;
                }
            }
        }
        let start: Vec<bool> = (0..p * p).map(|k| k / p != k % p && !gaps[k]).collect();
        SkeletonParams { alpha, order, m_max, na_delete, start: Adjacency::from_dense(p, &start), fixed_edges: Adjacency::from_dense(p, &fixed), threads: 1 }
    }

    fn same(a: &SkeletonResult, b: &SkeletonResult, what: &str) {
        assert_eq!(a.graph.to_dense(), b.graph.to_dense(), "{what}: graph");
        assert_eq!(a.all_sepsets(), b.all_sepsets(), "{what}: sepsets");
        assert_eq!(a.pmax.len(), b.pmax.len());
        for (k, (x, y)) in a.pmax.iter().zip(&b.pmax).enumerate() {
            assert!(x.to_bits() == y.to_bits(), "{what}: pMax cell {k}: {x} vs {y}");
        }
        assert_eq!(a.n_edgetests, b.n_edgetests, "{what}: n.edgetests");
        assert_eq!(a.max_ord, b.max_ord, "{what}: max.ord");
    }

    /// Runs the search on `k` ranks, each on its own thread with its own backend; `fail` makes
    /// rank r's slices fail at a level.
    fn on_ranks(params: &SkeletonParams, t: &HashTest, k: usize, fail: Option<(usize, usize)>) -> Vec<(Result<SkeletonResult>, Vec<RankLevel>)> {
        let mut ts = transports(k);
        std::thread::scope(|s| {
            let handles: Vec<_> = ts
                .iter_mut()
                .map(|tr| {
                    s.spawn(move || {
                        let rank = tr.rank;
                        let mut r = Ranks::new(ParallelCpu::new(t, 1).unwrap(), tr).unwrap();
                        r.fail_at_level = fail.filter(|f| f.0 == rank).map(|f| f.1);
                        let res = run_skeleton(params, &mut r, &mut NullWatch);
                        (res, r.levels)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn ranks_give_one_process_result_in_every_slot() {
        for seed in 0..12u64 {
            let p = 6 + (seed as usize * 7) % 19;
            let order = if seed % 2 == 0 { Order::Stable } else { Order::StableFast };
            let alpha = [0.05, 0.2, 0.5, 0.8][seed as usize % 4];
            let m_max = if seed % 5 == 4 { Some(1) } else { None };
            let prm = params(p, seed, order, alpha, m_max, seed % 3 != 0);
            let t = HashTest { seed };
            let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
            for k in 1..=4 {
                let got = on_ranks(&prm, &t, k, None);
                assert_eq!(got.len(), k);
                for (rank, (res, levels)) in got.into_iter().enumerate() {
                    let res = res.unwrap();
                    same(&res, &want, &format!("seed {seed}, p {p}, {order:?}, {k} ranks, rank {rank}"));
                    assert_eq!(levels.len(), res.levels.len());
                    if k == 1 {
                        assert!(levels.iter().all(|l| l.bytes_received == 0 && l.local_edges == l.edges));
                    }
                    for l in &levels {
                        assert!(l.fastest_seconds <= l.local_seconds && l.local_seconds <= l.slowest_seconds, "{l:?}");
                        assert!(l.prepare_seconds <= l.local_seconds && l.finish_seconds >= 0.0, "{l:?}");
                    }
                }
            }
        }
    }

    /// DenseCpu under another engine's name (a rank with another GPU model), or failing at a
    /// dense level.
    struct Renamed<'a> {
        inner: DenseCpu<'a, HashTest>,
        kind: &'static str,
        fail_at: Option<usize>,
    }

    impl DenseLevels for Renamed<'_> {
        fn dense_order_ok(&self, order: Order) -> bool {
            self.inner.dense_order_ok(order)
        }
        fn dense_kind(&self) -> String {
            self.kind.to_string()
        }
        fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()> {
            self.inner.dense_begin(order, start, fixed, alpha, na_value)
        }
        fn dense_level(&mut self, level: usize, pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
            if self.fail_at == Some(level) {
                return Err(PcError::Cuda(format!("a failure injected at dense level {level}")));
            }
            self.inner.dense_level(level, pmax, sep0, watch)
        }
        fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<()> {
            self.inner.dense_end(graph, pmax, sep0)
        }
    }

    /// How each rank of `dense_on_ranks` is made.
    #[derive(Clone, Copy)]
    enum Engine {
        Dense(&'static str),
        Planned,
        FailsAt(usize),
        Perturbed,
    }

    /// The search on ranks as the R glue runs it: start_search names each rank's dense engine,
    /// then the level loop. Per rank: its result, the levels it exchanged, whether it ran the
    /// dense levels.
    fn dense_on_ranks(prm: &SkeletonParams, t: &HashTest, engines: &[Engine]) -> Vec<(Result<SkeletonResult>, Vec<usize>, bool)> {
        let mut ts = transports(engines.len());
        std::thread::scope(|s| {
            let hs: Vec<_> = ts
                .iter_mut()
                .zip(engines)
                .map(|(tr, &engine)| {
                    s.spawn(move || {
                        let (kind, fail_at) = match engine {
                            Engine::Dense(k) => (k, None),
                            Engine::FailsAt(l) => ("cpu", Some(l)),
                            _ => ("cpu", None),
                        };
                        let mut with = WithDense { planned: ParallelCpu::new(t, 2).unwrap(), dense: Renamed { inner: DenseCpu::new(t, 2).unwrap(), kind, fail_at } };
                        let mut planned = ParallelCpu::new(t, 1).unwrap();
                        let b: &mut dyn Backend = if matches!(engine, Engine::Planned) { &mut planned } else { &mut with };
                        let kind = dense_kind(b, prm.order, RowsMode::Auto);
                        let agreed = match start_search(tr, None, kind.as_deref(), true) {
                            Ok(a) => a.dense_every_rank,
                            Err(e) => return (Err(e), Vec::new(), false),
                        };
                        let mut r = Ranks::new(b, tr).unwrap();
                        r.dense_every_rank = agreed;
                        r.threads = 2;
                        r.perturb_dense = matches!(engine, Engine::Perturbed);
                        let res = run_skeleton(prm, &mut r, &mut NullWatch);
                        (res, r.levels.iter().map(|l| l.level).collect(), r.dense_ran)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn ranks_of_one_kind_run_the_dense_levels_each_with_one_process_result() {
        for (seed, order, m_max) in [(3u64, Order::Stable, None), (4, Order::StableFast, None), (5, Order::Stable, Some(1)), (6, Order::StableFast, Some(0))] {
            let prm = params(17, seed, order, 0.3, m_max, true);
            let t = HashTest { seed };
            let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
            for k in [1usize, 2, 3] {
                for (rank, (res, exchanged, dense)) in dense_on_ranks(&prm, &t, &vec![Engine::Dense("cpu"); k]).into_iter().enumerate() {
                    let res = res.unwrap();
                    let what = format!("{order:?}, m.max {m_max:?}, {k} ranks, rank {rank}");
                    same(&res, &want, &what);
                    assert!(dense, "{what}: levels 0-1 on every rank");
                    assert!(exchanged.iter().all(|&l| l >= 2), "{what}: exchanged {exchanged:?}");
                    assert_eq!(exchanged.len(), res.levels.iter().filter(|l| l.level >= 2).count(), "{what}");
                }
            }
        }
    }

    /// The search on `k` ranks of one kind whose levels >= 2 split by rows (the CPU twin, forced),
    /// the exchange of keys after every test's worth of time; `fail` makes rank r fail at a level.
    fn rows_on_ranks(prm: &SkeletonParams, t: &HashTest, k: usize, fail: Option<(usize, usize)>) -> Vec<(Result<SkeletonResult>, Vec<RankLevel>)> {
        let mut ts = transports(k);
        std::thread::scope(|s| {
            let hs: Vec<_> = ts
                .iter_mut()
                .map(|tr| {
                    s.spawn(move || {
                        let rank = tr.rank;
                        let mut b = WithDense { planned: ParallelCpu::new(t, 2).unwrap(), dense: DenseCpu::new(t, 2).unwrap() };
                        let kind = dense_kind(&mut b, prm.order, RowsMode::Always);
                        assert!(kind.as_deref().is_some_and(|k| k.ends_with("; levels >= 2 by rows")), "{kind:?}");
                        let agreed = start_search(tr, None, kind.as_deref(), true).unwrap().dense_every_rank;
                        let mut r = Ranks::new(&mut b, tr).unwrap();
                        r.dense_every_rank = agreed;
                        r.rows = RowsMode::Always;
                        r.fail_at_level = fail.filter(|f| f.0 == rank).map(|f| f.1);
                        let res = run_skeleton(prm, &mut r, &mut NullWatch);
                        (res, r.levels)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn ranks_splitting_levels_by_rows_give_one_process_result() {
        let mut split = 0;
        for seed in 20..28u64 {
            let p = 12 + (seed as usize * 5) % 15;
            let alpha = [0.5, 0.8, 0.9, 0.95][seed as usize % 4];
            let prm = params(p, seed, Order::Stable, alpha, None, seed % 3 != 0);
            let t = HashTest { seed };
            let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
            for k in [2usize, 3, 4] {
                for (rank, (res, levels)) in rows_on_ranks(&prm, &t, k, None).into_iter().enumerate() {
                    let what = format!("seed {seed}, p {p}, {k} ranks, rank {rank}");
                    let res = res.unwrap();
                    same(&res, &want, &what);
                    assert_eq!(levels.len(), res.levels.iter().filter(|l| l.level >= 2).count(), "{what}");
                    // a level left without edges has nothing to split
                    for l in levels.iter().filter(|l| l.edges > 0) {
                        assert!(l.by_rows && l.exchanges >= 2 && l.local_edges == l.edges, "{what}: {l:?}");
                        assert!(l.prepare_seconds <= l.local_seconds && l.finish_seconds >= 0.0, "{what}: {l:?}");
                        assert!(l.fastest_seconds <= l.slowest_seconds, "{what}: {l:?}");
                    }
                    split += levels.iter().filter(|l| l.by_rows).count();
                }
            }
        }
        assert!(split >= 16, "levels split by rows: {split}");
    }

    /// [`HashTest`] slowed down: a rank with it runs its rows late.
    struct SlowTest<'a> {
        inner: &'a HashTest,
        delay: std::time::Duration,
    }

    impl CiTest for SlowTest<'_> {
        type Scratch = ();
        fn p_value(&self, sc: &mut (), x: u32, y: u32, s: &[u32]) -> Result<f64> {
            std::thread::sleep(self.delay);
            self.inner.p_value(sc, x, y, s)
        }
    }

    fn dealt_rank<T: CiTest + Sync>(prm: &SkeletonParams, t: &T, tr: &mut Threads, rows: RowsMode, moving: bool) -> (Result<SkeletonResult>, Vec<RankLevel>) {
        let mut b = WithDense { planned: ParallelCpu::new(t, 2).unwrap(), dense: DenseCpu::new(t, 2).unwrap() };
        let kind = dense_kind(&mut b, prm.order, rows);
        let agreed = start_search(tr, None, kind.as_deref(), true).unwrap().dense_every_rank;
        let mut r = Ranks::new(&mut b, tr).unwrap();
        r.dense_every_rank = agreed;
        r.rows = rows;
        r.moving = moving;
        let res = run_skeleton(prm, &mut r, &mut NullWatch);
        (res, r.levels)
    }

    // a slow rank's slices move to the fast ones as they run, split by rows or by edges, and the
    // result stays the one process's; with the slices kept, nothing moves
    #[test]
    fn slices_of_a_slow_rank_move_to_the_others() {
        let prm = params(16, 31, Order::Stable, 0.995, Some(2), false);
        let t = HashTest { seed: 31 };
        let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
        assert!(want.levels.iter().any(|l| l.level == 2 && l.tests > 5000), "level 2 holds many tests: {:?}", want.levels);
        let slow = SlowTest { inner: &t, delay: std::time::Duration::from_micros(50) };
        for (k, rows, moving) in [(2usize, RowsMode::Always, true), (3, RowsMode::Always, true), (2, RowsMode::Always, false), (2, RowsMode::Never, true), (3, RowsMode::Never, true), (2, RowsMode::Never, false)] {
            let mut ts = transports(k);
            let runs: Vec<(Result<SkeletonResult>, Vec<RankLevel>)> = std::thread::scope(|s| {
                let hs: Vec<_> = ts
                    .iter_mut()
                    .map(|tr| {
                        let (prm, t, slow) = (&prm, &t, &slow);
                        s.spawn(move || if tr.rank == 0 { dealt_rank(prm, slow, tr, rows, moving) } else { dealt_rank(prm, t, tr, rows, moving) })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut taken = vec![0u64; k];
            for (rank, (res, levels)) in runs.into_iter().enumerate() {
                let what = format!("{k} ranks, {rows:?}, moving {moving}, rank {rank}");
                same(&res.unwrap(), &want, &what);
                assert!(levels.iter().all(|l| l.by_rows == (rows == RowsMode::Always)), "{what}");
                // by edges the levels 0 and 1 are split too; a moving split exchanges its progress
                if moving {
                    assert!(levels.iter().all(|l| l.exchanges >= 2), "{what}: {levels:?}");
                }
                taken[rank] = levels.iter().map(|l| l.slices_taken).sum();
            }
            if moving {
                assert_eq!(taken[0], 0, "the slow rank takes nothing: {taken:?}");
                assert!(taken[1..].iter().sum::<u64>() > 0, "{k} ranks, {rows:?}: nothing moved to the fast ranks: {taken:?}");
            } else {
                assert!(taken.iter().all(|&s| s == 0), "{taken:?}");
            }
        }
    }

    #[test]
    fn a_rank_failing_in_a_level_split_by_rows_stops_every_rank() {
        let prm = params(20, 9, Order::Stable, 0.995, None, false);
        let t = HashTest { seed: 9 };
        let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
        assert!(want.max_ord >= 3, "the case reaches level 3");
        for (k, failing, level) in [(2usize, 1usize, 2usize), (3, 0, 3), (4, 2, 2)] {
            for (rank, (res, levels)) in rows_on_ranks(&prm, &t, k, Some((failing, level))).into_iter().enumerate() {
                match res {
                    Err(e @ PcError::OnRank { .. }) => {
                        let m = e.to_string();
                        assert!(m.starts_with(&format!("rank {failing}: internal error: a failure injected at level {level}")), "rank {rank}: {m}");
                    }
                    other => panic!("rank {rank} of {k}: expected rank {failing}'s error, got {other:?}"),
                }
                assert_eq!(levels.last().map(|l| l.level), Some(level), "rank {rank} of {k}");
            }
        }
    }

    #[test]
    fn ranks_of_different_kinds_plan_the_dense_levels() {
        let prm = params(17, 8, Order::Stable, 0.3, None, true);
        let t = HashTest { seed: 8 };
        let want = run_skeleton(&prm, &mut ParallelCpu::new(&t, 1).unwrap(), &mut NullWatch).unwrap();
        for engines in [vec![Engine::Dense("cuda (A)"), Engine::Dense("cuda (B)")], vec![Engine::Dense("cpu"), Engine::Dense("cpu"), Engine::Planned]] {
            for (rank, (res, exchanged, dense)) in dense_on_ranks(&prm, &t, &engines).into_iter().enumerate() {
                let res = res.unwrap();
                same(&res, &want, &format!("{} ranks, rank {rank}", engines.len()));
                assert!(!dense);
                assert_eq!(exchanged.len(), res.levels.len(), "every level planned and exchanged");
                assert_eq!(&exchanged[..2], &[0, 1]);
            }
        }
    }

    #[test]
    fn ranks_whose_dense_levels_differ_or_fail_all_stop() {
        for order in [Order::Stable, Order::StableFast] {
            let prm = params(16, 11, order, 0.4, None, true);
            let t = HashTest { seed: 11 };
            let got = dense_on_ranks(&prm, &t, &[Engine::Dense("cpu"), Engine::Dense("cpu"), Engine::Perturbed]);
            for (rank, (res, exchanged, _)) in got.into_iter().enumerate() {
                match res {
                    Err(PcError::InvalidArgument { arg: "cluster", msg }) => assert!(msg.starts_with("rank 2's levels 0-1 differ from rank 0's"), "{msg}"),
                    other => panic!("{order:?}: rank {rank}: expected a refusal naming the cluster, got {other:?}"),
                }
                assert!(exchanged.is_empty());
            }
            for (failing, level) in [(1usize, 0usize), (0, 1)] {
                let mut engines = vec![Engine::Dense("cpu"); 3];
                engines[failing] = Engine::FailsAt(level);
                for (rank, (res, _, _)) in dense_on_ranks(&prm, &t, &engines).into_iter().enumerate() {
                    match res {
                        Err(e @ PcError::OnRank { .. }) => {
                            let m = e.to_string();
                            assert!(m.starts_with(&format!("rank {failing}: ")) && m.contains(&format!("a failure injected at dense level {level}")), "rank {rank}: {m}");
                        }
                        other => panic!("{order:?}: rank {rank}: expected rank {failing}'s error, got {other:?}"),
                    }
                }
            }
            // one rank keeps its own error (a GPU's under backend = "auto" reruns on the CPU)
            match dense_on_ranks(&prm, &t, &[Engine::FailsAt(1)]).pop().unwrap().0 {
                Err(PcError::Cuda(m)) => assert!(m.contains("dense level 1"), "{m}"),
                other => panic!("expected its own error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_failing_rank_stops_every_rank_with_its_error() {
        let prm = params(16, 7, Order::Stable, 0.5, None, true);
        let t = HashTest { seed: 7 };
        let alone = on_ranks(&prm, &t, 1, Some((0, 1)));
        match &alone[0].0 {
            Err(PcError::Internal(m)) => assert!(m.starts_with("a failure injected at level 1"), "{m}"),
            other => panic!("one rank keeps its own error, got {other:?}"),
        }
        for (k, failing, level) in [(2usize, 1usize, 0usize), (3, 2, 1), (4, 0, 1), (3, 1, 2)] {
            let got = on_ranks(&prm, &t, k, Some((failing, level)));
            for (rank, (res, levels)) in got.into_iter().enumerate() {
                match res {
                    Err(e @ PcError::OnRank { .. }) => {
                        let m = e.to_string();
                        assert!(m.starts_with(&format!("rank {failing}: internal error: a failure injected at level {level}")), "rank {rank}: {m}");
                    }
                    other => panic!("rank {rank} of {k}: expected rank {failing}'s error, got {other:?}"),
                }
                assert_eq!(levels.len(), level + 1, "every rank took part in each exchange up to the failure");
            }
        }
    }

    #[test]
    fn a_rank_that_fails_before_the_first_level_stops_the_others() {
        let mut ts = transports(3);
        let got: Vec<Result<Start>> = std::thread::scope(|s| {
            let hs: Vec<_> = ts
                .iter_mut()
                .map(|tr| {
                    s.spawn(move || {
                        let failure = (tr.rank == 2).then(|| PcError::invalid("suffStat", "cannot open"));
                        start_search(tr, failure, None, true)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(matches!(&got[2], Err(PcError::InvalidArgument { arg: "suffStat", .. })), "{:?}", got[2]);
        for r in &got[..2] {
            match r {
                Err(e @ PcError::OnRank { rank: 2, .. }) => assert_eq!(e.to_string(), "rank 2: invalid argument 'suffStat': cannot open"),
                other => panic!("expected rank 2's error, got {other:?}"),
            }
        }
        let mut ts = transports(2);
        let ok: Vec<Result<Start>> = std::thread::scope(|s| {
            let hs: Vec<_> = ts.iter_mut().map(|tr| s.spawn(move || start_search(tr, None, None, true))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(ok.iter().all(|r| matches!(r, Ok(Start { dense_every_rank: false, edges_move: true }))), "no rank runs dense levels: {ok:?}");
        // one rank whose backend runs levels whole keeps every rank's slices where dealt
        let mut ts = transports(3);
        let got: Vec<Result<Start>> = std::thread::scope(|s| {
            let hs: Vec<_> = ts.iter_mut().map(|tr| { let moves = tr.rank != 1; s.spawn(move || start_search(tr, None, Some("cpu"), moves)) }).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|r| matches!(r, Ok(Start { dense_every_rank: true, edges_move: false }))), "{got:?}");
    }

    #[test]
    fn ranks_whose_plans_differ_stop_instead_of_mixing() {
        let t = HashTest { seed: 9 };
        let prm = [params(12, 9, Order::Stable, 0.4, None, true), params(12, 10, Order::Stable, 0.4, None, true)];
        let mut ts = transports(2);
        let got: Vec<Result<SkeletonResult>> = std::thread::scope(|s| {
            let hs: Vec<_> = ts
                .iter_mut()
                .zip(&prm)
                .map(|(tr, prm)| {
                    let t = &t;
                    s.spawn(move || run_skeleton(prm, &mut Ranks::new(ParallelCpu::new(t, 1).unwrap(), tr).unwrap(), &mut NullWatch))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in got {
            match r {
                Err(PcError::InvalidArgument { arg: "cluster", msg }) => assert!(msg.starts_with("rank 1 planned level 0"), "{msg}"),
                other => panic!("expected a refusal naming the cluster, got {other:?}"),
            }
        }
    }

    #[test]
    fn busy_ranks_exchange_as_the_soonest_grant_nears_its_end() {
        let floor = std::time::Duration::from_millis(10);
        let ms = |soonest| dealt_every(soonest, floor).as_millis();
        // a rank about to run out of its grant: at once (the floor)
        assert_eq!(ms(0), 10);
        assert_eq!(ms(300), 150);
        // every rank far from its grant's end, or none knows: at most a second apart
        assert_eq!(ms(60_000), DEALT_EXCHANGE_MAX_MS as u128);
        assert_eq!(ms(u64::MAX), DEALT_EXCHANGE_MAX_MS as u128);
        assert_eq!(dealt_every(0, std::time::Duration::from_millis(40)).as_millis(), 40);
    }

    // the slices cover the level once, in order, and a drift of the edges' weights along the
    // plan (what early successes make of the estimate) reaches every rank alike
    #[test]
    fn dealt_slices_cover_the_level_and_balance_a_drift() {
        for size in 1..=5usize {
            for n in [0usize, 1, 3, 17, 80, 1000, 5000] {
                let w: Vec<u64> = (0..n as u64).map(|i| 1 + i).collect();
                let slices = weighted_blocks(&w, SLICES_PER_RANK * size);
                let mut next = 0;
                for s in &slices {
                    assert_eq!(s.start, next);
                    assert!(!s.is_empty());
                    next = s.end;
                }
                assert_eq!(next, n);
                let dealt: Vec<usize> = (0..size).map(|r| slices_of(&slices, r, size).map(|s| s.len()).sum()).collect();
                assert_eq!(dealt.iter().sum::<usize>(), n);
                if n >= 1000 {
                    let load: Vec<u64> = (0..size).map(|r| slices_of(&slices, r, size).flat_map(|s| w[s.clone()].iter()).sum()).collect();
                    let (lo, hi) = (*load.iter().min().unwrap(), *load.iter().max().unwrap());
                    assert!((hi - lo) as f64 <= 1.5 * (hi as f64) / SLICES_PER_RANK as f64, "{size} ranks, {n} edges: {load:?}");
                    // so is the drift of an early success that halves the second half's tests
                    let real: Vec<u64> = (0..size)
                        .map(|r| slices_of(&slices, r, size).flat_map(|s| s.clone()).map(|i| if i < n / 2 { w[i] } else { w[i] / 2 }).sum())
                        .collect();
                    let (lo, hi) = (*real.iter().min().unwrap(), *real.iter().max().unwrap());
                    assert!((hi - lo) as f64 <= 0.25 * hi as f64, "{size} ranks, {n} edges: {real:?}");
                }
            }
        }
    }

    #[test]
    fn outcomes_round_trip_bit_for_bit() {
        let os = [
            EdgeOutcome::NONE,
            EdgeOutcome { best: Some((0, 0)), p_best: 0.5, max_fail: f64::NEG_INFINITY },
            EdgeOutcome { best: Some((1, u64::MAX >> 1)), p_best: f64::NAN, max_fail: 0.01 },
            EdgeOutcome { best: Some((0, 300)), p_best: 1.0, max_fail: -0.0 },
            EdgeOutcome { best: None, p_best: f64::NAN, max_fail: 0.049 },
        ];
        let mut bytes = Vec::new();
        encode_outcomes(&os, &mut bytes);
        let mut back = Vec::new();
        decode_outcomes(&bytes, os.len(), &mut back).unwrap();
        for (a, b) in os.iter().zip(&back) {
            assert_eq!(a.best, b.best);
            assert_eq!(a.max_fail.to_bits(), b.max_fail.to_bits());
            if a.best.is_some() {
                assert_eq!(a.p_best.to_bits(), b.p_best.to_bits());
            }
        }
        assert!(decode_outcomes(&bytes[..bytes.len() - 1], os.len(), &mut Vec::new()).is_err());
        assert!(decode_outcomes(&bytes, os.len() - 1, &mut Vec::new()).is_err());
    }
}
