//! Each rule on a small graph made by hand: the marks it sets where it applies, and nothing where
//! a condition fails. Marks are written (a, b, mark at b, mark at a) for the edge a - b.

use super::marks::{Pag, ARROW as A, CIRCLE as O, NONE, TAIL as T};
use super::paths::{min_discr_path, min_uncov_circ_path, min_uncov_pd_path};
use super::rules::*;
use super::unf::{numb2triple, UnfTriples};
use super::*;
use crate::backend::NullWatch;
use crate::orient::PairSepsets;

fn pag(p: usize, edges: &[(u32, u32, u8, u8)]) -> Pag {
    Pag::from_edges(p, edges).unwrap()
}

/// The marks of a - b as (at b, at a).
fn edge(g: &Pag, a: u32, b: u32) -> (u8, u8) {
    (g.get(a, b), g.get(b, a))
}

fn unf(p: usize, triples: &[(u32, u32, u32)]) -> UnfTriples {
    let nums: Vec<f64> = triples.iter().map(|&(i, j, k)| (k + 1) as f64 + p as f64 * ((j + 1) as f64 + p as f64 * (i + 1) as f64)).collect();
    UnfTriples::from_numbers(p, &nums)
}

#[test]
fn cells_are_column_major() {
    let g = pag(3, &[(0, 1, O, O), (1, 2, A, O), (0, 2, O, T)]);
    assert_eq!(g.cells(|v, _| v != NONE), vec![(1, 0), (2, 0), (0, 1), (2, 1), (0, 2), (1, 2)]);
    assert_eq!(g.cells(|v, t| v == O && t == O), vec![(1, 0), (0, 1)]);
}

#[test]
fn triple_numbers_decode_to_one_triple_or_none() {
    let p = 7;
    for (i, j, k) in [(0u32, 0u32, 0u32), (6, 6, 6), (2, 5, 6), (6, 0, 3)] {
        let v = (k + 1) as f64 + p as f64 * ((j + 1) as f64 + p as f64 * (i + 1) as f64);
        assert_eq!(numb2triple(p, v), Some((i, j, k)));
    }
    for v in [f64::NAN, 0.0, -3.0, 8.5, 1.0, 7.0 + 7.0 * 7.0, 7.0 * 8.0 * 8.0 + 1.0e6] {
        assert_eq!(numb2triple(p, v), None, "{v}");
    }
    // a listed vector of no triple still selects pcalg's conservative branch
    let u = UnfTriples::from_numbers(p, &[f64::NAN]);
    assert!(u.listed() && !u.contains(0, 1, 2));
    let u = unf(p, &[(0, 1, 2)]);
    assert!(u.contains(0, 1, 2) && u.contains(2, 1, 0) && !u.contains(1, 0, 2));
}

#[test]
fn faith_check_skips_the_triple_around_the_start() {
    let u = unf(5, &[(3, 0, 1)]);
    // (last, first, second) is not checked
    assert!(u.faithful(&[0, 1, 2, 3]));
    let u = unf(5, &[(2, 3, 0)]);
    assert!(!u.faithful(&[0, 1, 2, 3]));
    let u = unf(5, &[(1, 2, 0)]);
    assert!(!u.faithful(&[0, 1, 2]));
}

#[test]
fn rule0_colliders_from_sepsets_unf_and_jci() {
    let base = || pag(4, &[(0, 1, O, O), (1, 2, O, O), (2, 3, O, O)]);
    let mut g = base();
    let mut sep = PairSepsets::new();
    sep.insert(1, 3, &[2]);
    rule0(&mut g, &sep, &UnfTriples::none(), |_| false);
    assert_eq!((edge(&g, 0, 1), edge(&g, 2, 1)), ((A, O), (A, O)));
    assert_eq!(edge(&g, 2, 3), (O, O));
    // 1 in sepset[[2]][[0]] (either order counts)
    let mut g = base();
    sep.insert(2, 0, &[1]);
    rule0(&mut g, &sep, &UnfTriples::none(), |_| false);
    assert_eq!(edge(&g, 0, 1), (O, O));
    // listed triples are skipped in either order
    let mut g = base();
    rule0(&mut g, &PairSepsets::new(), &unf(4, &[(2, 1, 0), (1, 2, 3)]), |_| false);
    assert_eq!(g.marks(), base().marks());
    // JCI 3: a context variable is never the middle node
    let mut g = base();
    rule0(&mut g, &PairSepsets::new(), &UnfTriples::none(), |y| y == 1);
    assert_eq!((edge(&g, 0, 1), edge(&g, 1, 2), edge(&g, 3, 2)), ((O, O), (A, O), (A, O)));
}

#[test]
fn rule1_orients_away_from_an_arrowhead() {
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, O, O)]);
    rule1(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 1, 2), (A, T));
    // a shielded triple stays
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, O, O), (0, 2, O, O)]);
    rule1(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 1, 2), (O, O));
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, O, O)]);
    rule1(&mut g, &unf(3, &[(2, 1, 0)]));
    assert_eq!(edge(&g, 1, 2), (O, O));
}

#[test]
fn rule2_both_forms() {
    // 0 -> 1 *-> 2 with 0 *-o 2
    let mut g = pag(3, &[(0, 1, A, T), (1, 2, A, O), (0, 2, O, O)]);
    rule2(&mut g);
    assert_eq!(edge(&g, 0, 2), (A, O));
    // 0 *-> 1 -> 2
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, A, T), (0, 2, O, A)]);
    rule2(&mut g);
    assert_eq!(edge(&g, 0, 2), (A, A));
    // neither
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, A, O), (0, 2, O, O)]);
    rule2(&mut g);
    assert_eq!(edge(&g, 0, 2), (O, O));
}

#[test]
fn rule3_needs_non_adjacent_ends() {
    // 0 *-> 1 <-* 2, 0 *-o 3 o-* 2, 3 *-o 1
    let es = [(0, 1, A, O), (2, 1, A, O), (0, 3, O, O), (2, 3, O, O), (3, 1, O, O)];
    let mut g = pag(4, &es);
    rule3(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 3, 1), (A, O));
    let mut g = pag(4, &es);
    rule3(&mut g, &unf(4, &[(0, 3, 2)]));
    assert_eq!(edge(&g, 3, 1), (O, O));
    let mut more = es.to_vec();
    more.push((0, 2, O, O));
    let mut g = pag(4, &more);
    rule3(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 3, 1), (O, O));
}

/// d = 0 *-> a = 1 <-* b = 2, a -> c = 3, b o-o c; 0 and 3 not adjacent.
fn discriminating(at_b_on_ab: u8) -> Pag {
    pag(4, &[(0, 1, A, O), (2, 1, A, at_b_on_ab), (1, 3, A, T), (2, 3, O, O)])
}

#[test]
fn rule4_by_the_sepset_of_the_ends() {
    assert_eq!(min_discr_path(&discriminating(O), 1, 2, 3), Some([0, 1, 2, 3]));
    let mut sep = PairSepsets::new();
    sep.insert(3, 0, &[2]);
    let mut g = discriminating(O);
    rule4(&mut g, &mut UnfTriples::none(), &mut BySepsets(&sep), false).unwrap();
    assert_eq!(edge(&g, 2, 3), (A, T));
    let mut g = discriminating(O);
    rule4(&mut g, &mut UnfTriples::none(), &mut BySepsets(&PairSepsets::new()), false).unwrap();
    assert_eq!((edge(&g, 2, 3), edge(&g, 1, 2)), ((A, A), (A, A)));
    // a tail at b on a - b: overwritten, or kept under JCI
    let mut g = discriminating(T);
    rule4(&mut g, &mut UnfTriples::none(), &mut BySepsets(&PairSepsets::new()), false).unwrap();
    assert_eq!(edge(&g, 1, 2), (A, A));
    let mut g = discriminating(T);
    rule4(&mut g, &mut UnfTriples::none(), &mut BySepsets(&PairSepsets::new()), true).unwrap();
    assert_eq!((edge(&g, 1, 2), edge(&g, 2, 3)), ((T, A), (A, A)));
}

#[test]
fn rule4_longer_path_and_a_verdict_that_asks_again() {
    // e = 4 *-> d = 0 <-> a = 1, d -> c, e not adjacent to c
    let mut g = pag(5, &[(4, 0, A, O), (0, 1, A, A), (2, 1, A, O), (1, 3, A, T), (0, 3, A, T), (2, 3, O, O)]);
    assert_eq!(min_discr_path(&g, 1, 2, 3), Some([4, 0, 2, 3]));
    // the closure removes d - a once, then the search finds no path
    let mut calls = 0;
    let mut again = |pag: &mut Pag, _: &mut UnfTriples, path: &[u32]| {
        calls += 1;
        assert_eq!(path, &[4, 0, 2, 3]);
        pag.set(0, 1, NONE);
        pag.set(1, 0, NONE);
        Ok(PathVerdict::Again)
    };
    rule4(&mut g, &mut UnfTriples::none(), &mut again, false).unwrap();
    assert_eq!(calls, 1);
    assert_eq!(edge(&g, 2, 3), (O, O));
}

#[test]
fn rule5_uncovered_circle_cycles() {
    // the 4-cycle 0 o-o 1 o-o 3 o-o 2 o-o 0 (a = 0, b = 1, c = 2, d = 3)
    let es = [(0, 1, O, O), (0, 2, O, O), (2, 3, O, O), (3, 1, O, O)];
    let mut g = pag(4, &es);
    rule5(&mut g, &UnfTriples::none());
    for (a, b) in [(0, 1), (0, 2), (2, 3), (3, 1)] {
        assert_eq!(edge(&g, a, b), (T, T));
    }
    let mut g = pag(4, &es);
    rule5(&mut g, &unf(4, &[(0, 2, 3)]));
    // walked from 0 or 3 the cycle holds the listed triple; from the edge (2, 0) it is walked as
    // 2, 3, 1, 0, where the triple sits at the place faith.check skips
    assert_eq!(edge(&g, 0, 1), (T, T));
    // a 5-cycle through c - x - d
    let es5 = [(0, 1, O, O), (0, 2, O, O), (2, 4, O, O), (4, 3, O, O), (3, 1, O, O)];
    let g = pag(5, &es5);
    assert_eq!(min_uncov_circ_path(&g, &UnfTriples::none(), [0, 2, 3, 1]), Some(vec![0, 2, 4, 3, 1]));
    let mut g = pag(5, &es5);
    rule5(&mut g, &UnfTriples::none());
    assert_eq!((edge(&g, 2, 4), edge(&g, 4, 3)), ((T, T), (T, T)));
    // a chord covers it
    let mut chord = es5.to_vec();
    chord.push((2, 3, O, O));
    let mut g = pag(5, &chord);
    rule5(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 2, 4), (O, O));
}

#[test]
fn rules6_and_7() {
    let mut g = pag(3, &[(0, 1, T, T), (1, 2, O, O)]);
    rule6(&mut g);
    assert_eq!(edge(&g, 1, 2), (O, T));
    let mut g = pag(3, &[(0, 1, O, T), (1, 2, O, O)]);
    rule7(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 1, 2), (O, T));
    let mut g = pag(3, &[(0, 1, O, T), (1, 2, O, O)]);
    rule7(&mut g, &unf(3, &[(0, 1, 2)]));
    assert_eq!(edge(&g, 1, 2), (O, O));
    let mut g = pag(3, &[(0, 1, O, T), (1, 2, O, O), (0, 2, O, O)]);
    rule7(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 1, 2), (O, O));
}

#[test]
fn rules8_to_10() {
    // 0 -> 1 -> 2, 0 o-> 2
    let mut g = pag(3, &[(0, 1, A, T), (1, 2, A, T), (0, 2, A, O)]);
    rule8(&mut g);
    assert_eq!(edge(&g, 0, 2), (A, T));
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, A, T), (0, 2, A, O)]);
    rule8(&mut g);
    assert_eq!(edge(&g, 0, 2), (A, O));
    // rule 9: 0 o-> 3 and 0 o-o 1 o-o 2 o-> 3, uncovered
    let es = [(0, 3, A, O), (0, 1, O, O), (1, 2, O, O), (2, 3, A, O)];
    let g = pag(4, &es);
    assert_eq!(min_uncov_pd_path(&g, &UnfTriples::none(), 0, 1, 3), Some(vec![0, 1, 2, 3]));
    let mut g = pag(4, &es);
    rule9(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 0, 3), (A, T));
    let mut g = pag(4, &es);
    rule9(&mut g, &unf(4, &[(1, 2, 3)]));
    assert_eq!(edge(&g, 0, 3), (A, O));
    // rule 10, easy: 1 -> 3 <- 2, 0 o-o 1, 0 o-o 2, 1 and 2 not adjacent, 0 o-> 3
    let es = [(1, 3, A, T), (2, 3, A, T), (0, 1, O, O), (0, 2, O, O), (0, 3, A, O)];
    let mut g = pag(4, &es);
    rule10(&mut g, &UnfTriples::none(), Rule10Paths::EdgeWhenAdjacent);
    assert_eq!(edge(&g, 0, 3), (A, T));
    let mut g = pag(4, &es);
    rule10(&mut g, &unf(4, &[(1, 0, 2)]), Rule10Paths::EdgeWhenAdjacent);
    assert_eq!(edge(&g, 0, 3), (A, O));
    // rule 10 through paths: 0 o-o 4 o-> 1 -> 3, 0 o-o 5 o-> 2 -> 3 (4, 5 not adjacent)
    let es = [(1, 3, A, T), (2, 3, A, T), (0, 4, O, O), (4, 1, A, O), (0, 5, O, O), (5, 2, A, O), (0, 3, A, O), (1, 2, O, O)];
    let mut g = pag(6, &es);
    rule10(&mut g, &UnfTriples::none(), Rule10Paths::EdgeWhenAdjacent);
    assert_eq!(edge(&g, 0, 3), (A, T));
}

#[test]
fn udag2pag_on_a_y_structure() {
    // 0 -> 2 <- 1, 2 -> 3: the skeleton with sepset(0, 1) = {} and sepset(0|1, 3) = {2}
    let mut g = pag(4, &[(0, 2, O, O), (1, 2, O, O), (2, 3, O, O)]);
    let mut sep = PairSepsets::new();
    sep.insert(0, 3, &[2]);
    sep.insert(1, 3, &[2]);
    udag2pag(&mut g, &sep, &mut UnfTriples::none(), &[], &PagOptions::default(), &mut NullWatch).unwrap();
    assert_eq!((edge(&g, 0, 2), edge(&g, 1, 2), edge(&g, 2, 3)), ((A, O), (A, O), (A, T)));
    // JCI 12 with 0 a context variable: 0 -> 2
    let mut g = pag(4, &[(0, 2, O, O), (1, 2, O, O), (2, 3, O, O)]);
    let ctx = [true, false, false, false];
    let opts = PagOptions { jci: Jci::OneTwo, ..Default::default() };
    udag2pag(&mut g, &sep, &mut UnfTriples::none(), &ctx, &opts, &mut NullWatch).unwrap();
    assert_eq!(edge(&g, 0, 2), (A, T));
    // JCI 123 joins context variables that were not adjacent
    let mut g = pag(4, &[(0, 2, O, O), (1, 2, O, O), (2, 3, O, O)]);
    let ctx = [true, true, false, false];
    udag2pag(&mut g, &sep, &mut UnfTriples::none(), &ctx, &PagOptions { jci: Jci::OneTwoThree, ..Default::default() }, &mut NullWatch).unwrap();
    assert_eq!((edge(&g, 0, 1), edge(&g, 0, 2)), ((A, A), (A, T)));
    assert_eq!(g.neighbours(0), &[1, 2]);
    // a graph without edges is returned untouched
    let mut g = pag(3, &[]);
    udag2pag(&mut g, &sep, &mut UnfTriples::none(), &[true, true, true], &PagOptions { jci: Jci::OneTwoThree, ..Default::default() }, &mut NullWatch).unwrap();
    assert!(!g.wrote());
}

#[test]
fn bad_marks_are_refused() {
    assert!(Pag::from_marks(2, vec![0, 4, 1, 0]).is_err());
    assert!(Pag::from_marks(2, vec![0, 1, 1]).is_err());
}

#[test]
fn one_sided_cells_as_pcalg_reads_them() {
    // rule 0 tests x - z by amat[x, z] alone: with amat[2, 0] set but amat[0, 2] not, 0 o-o 1 o-o 2
    // is still a collider candidate from x = 0 (and writes amat[2, 1], which was 0)
    let mut m = vec![NONE; 9];
    let at = |a: usize, b: usize| a + 3 * b;
    m[at(0, 1)] = O;
    m[at(1, 0)] = O;
    m[at(1, 2)] = O;
    m[at(2, 0)] = O;
    let mut g = Pag::from_marks(3, m).unwrap();
    assert_eq!(g.neighbours(0), &[1, 2]);
    // pairs not adjacent both ways: 0 - 2 and 1 - 2 (amat[2, 1] is 0)
    assert_eq!(g.sepset_pairs(), vec![(0, 2), (1, 2)]);
    rule0(&mut g, &PairSepsets::new(), &UnfTriples::none(), |_| false);
    assert_eq!((g.get(0, 1), g.get(2, 1)), (A, A));
}

#[test]
fn rule1_overwrites_a_tail_where_the_rules_conflict() {
    // 0 *-> 1 and 1 -o 2 read as b o-* c with amat[1, 2] = 3: pcalg sets the arrowhead anyway
    let mut g = pag(3, &[(0, 1, A, O), (1, 2, T, O)]);
    rule1(&mut g, &UnfTriples::none());
    assert_eq!(edge(&g, 1, 2), (A, T));
    assert!(g.take_changed() && !g.take_changed());
}
