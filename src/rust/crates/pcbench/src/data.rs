//! Data for the bench: a correlation matrix read from a file, or simulated from a random Gaussian
//! DAG (seeded, no dependency beyond std: xoshiro256** and Box-Muller).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// xoshiro256** seeded through splitmix64.
pub struct Rng {
    s: [u64; 4],
    spare: Option<f64>,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng { s: [next(), next(), next(), next()], spare: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform on [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller, both values used).
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return v;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (2.0 * std::f64::consts::PI * u2).sin_cos();
        self.spare = Some(r * s);
        r * c
    }
}

/// A random DAG on p nodes in index order (each pair j < i an edge with probability
/// degree / (p - 1), weight uniform in [0.1, 1], as pcalg's randomDAG), n samples of the linear
/// Gaussian model with unit error variances, and their correlation matrix (column-major,
/// exactly symmetric, unit diagonal). `collinear` variables are then overwritten by the sum of two
/// others (exactly collinear data: singular submatrices at levels >= 2, the pseudo-inverse path).
/// Returns (C, number of DAG edges).
pub fn random_dag_cor(p: usize, n: usize, degree: f64, seed: u64, threads: usize, collinear: usize) -> (Vec<f64>, usize) {
    let mut rng = Rng::new(seed);
    let q = if p > 1 { (degree / (p - 1) as f64).min(1.0) } else { 0.0 };
    let mut parents: Vec<Vec<(usize, f64)>> = vec![Vec::new(); p];
    let mut n_edges = 0;
    for (i, par) in parents.iter_mut().enumerate() {
        for j in 0..i {
            if rng.uniform() < q {
                par.push((j, 0.1 + 0.9 * rng.uniform()));
                n_edges += 1;
            }
        }
    }
    // column-major n x p
    let mut x = vec![0.0; n * p];
    for i in 0..p {
        for k in 0..n {
            x[i * n + k] = rng.normal();
        }
        for &(j, w) in &parents[i] {
            let (head, tail) = x.split_at_mut(i * n);
            let col_j = &head[j * n..j * n + n];
            for (xi, xj) in tail[..n].iter_mut().zip(col_j) {
                *xi += w * xj;
            }
        }
    }
    for _ in 0..collinear.min(p / 3) {
        let pick = |rng: &mut Rng| (rng.next_u64() % p as u64) as usize;
        let (a1, a2, b) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
        if a1 != a2 && b != a1 && b != a2 {
            let sum: Vec<f64> = (0..n).map(|k| x[a1 * n + k] + x[a2 * n + k]).collect();
            x[b * n..b * n + n].copy_from_slice(&sum);
        }
    }
    (correlation(&mut x, n, p, threads), n_edges)
}

/// Pearson correlation of the columns of the column-major n x p matrix `x` (overwritten by the
/// standardised columns), computed on `threads` threads (0: all cores).
pub fn correlation(x: &mut [f64], n: usize, p: usize, threads: usize) -> Vec<f64> {
    for col in x.chunks_mut(n) {
        let mean = col.iter().sum::<f64>() / n as f64;
        col.iter_mut().for_each(|v| *v -= mean);
        let norm = col.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            col.iter_mut().for_each(|v| *v /= norm);
        }
    }
    let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |t| t.get()) } else { threads };
    let x = &*x;
    // upper triangle by columns b, split across threads by interleaving columns
    let parts: Vec<Vec<(usize, Vec<f64>)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    let mut b = t;
                    while b < p {
                        let cb = &x[b * n..b * n + n];
                        let col: Vec<f64> =
                            (0..b).map(|a| x[a * n..a * n + n].iter().zip(cb).map(|(u, v)| u * v).sum()).collect();
                        out.push((b, col));
                        b += threads;
                    }
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("correlation thread")).collect()
    });
    let mut c = vec![0.0; p * p];
    for (b, col) in parts.into_iter().flatten() {
        for (a, v) in col.into_iter().enumerate() {
            c[a + b * p] = v;
            c[b + a * p] = v;
        }
    }
    for i in 0..p {
        c[i + i * p] = 1.0;
    }
    c
}

/// Reads a p x p matrix: raw little-endian f64 (any extension but .csv) or CSV / whitespace text.
pub fn read_matrix(path: &Path) -> Result<(Vec<f64>, usize), String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let vals: Vec<f64> = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        let mut v = Vec::new();
        for line in BufReader::new(f).lines() {
            let line = line.map_err(|e| e.to_string())?;
            for tok in line.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()) {
                v.push(tok.trim_matches('"').parse::<f64>().map_err(|_| format!("not a number: {tok}"))?);
            }
        }
        v
    } else {
        let mut bytes = Vec::new();
        BufReader::new(f).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if bytes.len() % 8 != 0 {
            return Err(format!("{}: size is not a multiple of 8 bytes", path.display()));
        }
        bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
    };
    let p = (vals.len() as f64).sqrt().round() as usize;
    if p * p != vals.len() || p == 0 {
        return Err(format!("{}: {} values do not make a square matrix", path.display(), vals.len()));
    }
    Ok((vals, p))
}

pub fn write_matrix(path: &Path, c: &[f64]) -> Result<(), String> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?);
    for v in c {
        f.write_all(&v.to_le_bytes()).map_err(|e| e.to_string())?;
    }
    f.flush().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normals_look_normal() {
        let mut r = Rng::new(7);
        let v: Vec<f64> = (0..20000).map(|_| r.normal()).collect();
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let s = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
        assert!(m.abs() < 0.03 && (s - 1.0).abs() < 0.05, "{m} {s}");
    }

    #[test]
    fn correlation_is_a_correlation() {
        let (c, _) = random_dag_cor(30, 50, 3.0, 1, 2, 0);
        for i in 0..30 {
            assert_eq!(c[i + i * 30], 1.0);
            for j in 0..30 {
                assert_eq!(c[i + j * 30], c[j + i * 30]);
                assert!(c[i + j * 30].abs() <= 1.0 + 1e-12);
            }
        }
        let (c2, _) = random_dag_cor(30, 50, 3.0, 1, 1, 0);
        assert_eq!(c, c2, "same seed, any thread count, same matrix");
    }
}
