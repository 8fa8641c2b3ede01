//! pc-cmiknn against tigramite's own CMIknn (fixtures written by `fixtures/make-fixtures.py`).

use pc_cmiknn::permute::{greedy_claim, z_neighbours};
use pc_cmiknn::{CmiKnn, CmiKnnParams, Knn, RankData};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Column-major values of a fixture data file (header line, comma-separated rows).
fn data(name: &str) -> (Vec<f64>, usize, usize) {
    let text = fixture(name);
    let rows: Vec<Vec<f64>> = text.lines().skip(1).map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    let (n, p) = (rows.len(), rows[0].len());
    let mut v = vec![0.0; n * p];
    for (i, r) in rows.iter().enumerate() {
        for (j, &x) in r.iter().enumerate() {
            v[j * n + i] = x;
        }
    }
    (v, n, p)
}

fn ints(s: &str) -> Vec<u32> {
    s.split_whitespace().map(|v| v.parse().unwrap()).collect()
}

#[test]
fn statistic_equals_tigramite() {
    let mut checked = 0;
    let mut worst = 0.0f64;
    for line in fixture("cmi_stats.csv").lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let n: usize = f[0].parse().unwrap();
        let (x, y): (u32, u32) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        let s = ints(f[3]);
        let knn: f64 = f[4].parse().unwrap();
        let want: f64 = f[5].parse().unwrap();
        let (v, rn, p) = data(&format!("cmi_data_{n}.csv"));
        let knn = if knn < 1.0 { Knn::Fraction(knn) } else { Knn::Count(knn as usize) };
        let t = CmiKnn::new(RankData::from_columns(&v, rn, p).unwrap(), CmiKnnParams { knn, ..Default::default() }).unwrap();
        let got = t.statistic(x, y, &s).unwrap();
        let err = (got - want).abs();
        worst = worst.max(err);
        assert!(err <= 1e-12, "{line}: ours {got:.17} tigramite {want:.17}");
        checked += 1;
    }
    assert!(checked >= 90, "only {checked} fixture rows");
    eprintln!("{checked} statistics, largest difference {worst:e}");
}

#[test]
fn greedy_claim_equals_tigramite() {
    for line in fixture("restricted.csv").lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let kp: usize = f[2].parse().unwrap();
        let (order, lists, want) = (ints(f[3]), ints(f[4]), ints(f[5]));
        let mut got = vec![0; order.len()];
        greedy_claim(&order, &lists, kp, &mut Vec::new(), &mut got);
        assert_eq!(got, want, "{line}");
    }
}

#[test]
fn z_neighbours_equal_tigramite_where_unambiguous() {
    let (v, n, p) = data("zn_data_200.csv");
    let d = RankData::from_columns(&v, n, p).unwrap();
    let mut rows = 0;
    let mut cache: Option<(String, usize, Vec<u32>)> = None;
    for line in fixture("zneighbours.csv").lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let s = ints(f[1]);
        let kp: usize = f[2].parse().unwrap();
        let a: usize = f[3].parse().unwrap();
        let mut want = ints(f[4]);
        want.sort();
        if cache.as_ref().map(|c| (c.0.as_str(), c.1)) != Some((f[1], kp)) {
            let zs: Vec<&[u32]> = s.iter().map(|&j| d.column(j)).collect();
            let mut out = vec![0; n * kp];
            z_neighbours(&zs, n, kp, &mut out, &mut Vec::new()).unwrap();
            cache = Some((f[1].to_string(), kp, out));
        }
        let out = &cache.as_ref().unwrap().2;
        let mut got = out[a * kp..(a + 1) * kp].to_vec();
        got.sort();
        assert_eq!(got, want, "{line}");
        rows += 1;
    }
    assert!(rows > 500, "{rows}");
}
