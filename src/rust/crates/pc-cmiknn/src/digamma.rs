//! The digamma function at the integers 1..=n, as a table: the estimator only ever evaluates
//! psi at neighbour counts, and the GPU reads the same table, so both sides add the same doubles.

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// psi(m) for an integer m >= 1, accurate to a few ulps: the harmonic sum below 10, the
/// asymptotic series (Bernoulli terms to m^-14; the next term is below 1e-17 at m = 10) above.
pub fn digamma_int(m: usize) -> f64 {
    assert!(m >= 1, "digamma at {m}");
    if m < 10 {
        let mut s = -EULER_GAMMA;
        for j in 1..m {
            s += 1.0 / j as f64;
        }
        return s;
    }
    let x = m as f64;
    let r = 1.0 / (x * x);
    // 1/12 - r/120 + r^2/252 - r^3/240 + r^4/132 - 691 r^5/32760 + r^6/12, times r
    let series = r
        * (1.0 / 12.0
            - r * (1.0 / 120.0
                - r * (1.0 / 252.0
                    - r * (1.0 / 240.0 - r * (1.0 / 132.0 - r * (691.0 / 32760.0 - r * (1.0 / 12.0)))))));
    x.ln() - 0.5 / x - series
}

/// psi(0..=n), with psi(0) = NaN (never read: every count includes the sample itself).
pub fn digamma_table(n: usize) -> Result<Vec<f64>, std::collections::TryReserveError> {
    let mut t = Vec::new();
    t.try_reserve_exact(n + 1)?;
    t.push(f64::NAN);
    t.extend((1..=n).map(digamma_int));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recurrence_and_known_values() {
        assert!((digamma_int(1) + EULER_GAMMA).abs() < 1e-16);
        // psi(m + 1) = psi(m) + 1/m across the switch from sum to series
        for m in 1..200 {
            let d = digamma_int(m + 1) - digamma_int(m) - 1.0 / m as f64;
            assert!(d.abs() < 4e-16 * digamma_int(m + 1).abs().max(1.0), "m = {m}: {d}");
        }
        // scipy.special.digamma(1000), digamma(12345)
        assert!((digamma_int(1000) - 6.907_255_195_648_812).abs() < 2e-15);
        assert!((digamma_int(12345) - 9.420_965_899_004_846).abs() < 4e-15);
    }
}
