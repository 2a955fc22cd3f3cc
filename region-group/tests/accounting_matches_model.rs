//! Property test: under any sequence of listener events, spool accounting
//! and limit changes, the group's counters, soft-limit callbacks, admission
//! permission and largest-region answers agree with a simple model.
mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::id;
use logalloc::RegionListener;
use proptest::prelude::*;
use region_group::{ReclaimConfig, RegionGroup};

#[derive(Debug, Clone)]
enum Op {
    Add(u64, usize),
    Del(u64),
    Increase(u64, usize),
    Decrease(u64, usize),
    Merge(u64, u64),
    Ground(u64),
    Account(usize),
    Revert(usize),
    AccountRegion(u64, usize),
    RevertRegion(u64, usize),
    Limits(usize, usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let r = 0..4u64;
    let n = 0..300usize;
    prop_oneof![
        (r.clone(), n.clone()).prop_map(|(r, n)| Op::Add(r, n)),
        r.clone().prop_map(Op::Del),
        (r.clone(), n.clone()).prop_map(|(r, n)| Op::Increase(r, n)),
        (r.clone(), n.clone()).prop_map(|(r, n)| Op::Decrease(r, n)),
        (r.clone(), r.clone()).prop_map(|(a, b)| Op::Merge(a, b)),
        r.clone().prop_map(Op::Ground),
        n.clone().prop_map(Op::Account),
        n.clone().prop_map(Op::Revert),
        (r.clone(), n.clone()).prop_map(|(r, n)| Op::AccountRegion(r, n)),
        (r.clone(), n.clone()).prop_map(|(r, n)| Op::RevertRegion(r, n)),
        (n.clone(), n.clone(), n).prop_map(|(a, b, c)| Op::Limits(a * 2, b * 2, c * 3)),
    ]
}

#[derive(Default)]
struct Model {
    /// Per region: total, grounded, spooled bytes attributed to it.
    regions: BTreeMap<u64, (usize, bool, usize)>,
    /// Spooled bytes accounted through the group-level calls.
    spooled: usize,
    hard: usize,
    soft: usize,
    real_hard: usize,
    reclaiming: bool,
    log: Vec<bool>,
}

impl Model {
    fn real(&self) -> usize {
        self.regions.values().map(|&(total, ..)| total).sum()
    }
    fn spooled(&self) -> usize {
        self.spooled + self.regions.values().map(|&(.., s)| s).sum::<usize>()
    }
    fn unspooled(&self) -> usize {
        self.real().saturating_sub(self.spooled())
    }
    fn check_soft(&mut self) {
        let over = self.unspooled() > self.soft.min(self.hard);
        if over != self.reclaiming {
            self.reclaiming = over;
            self.log.push(over);
        }
    }
    fn largest_flushable(&self) -> Option<u64> {
        self.regions
            .iter()
            .filter(|&(_, &(total, grounded, _))| !grounded && total > 0)
            .max_by_key(|&(&r, &(total, ..))| (total, r))
            .map(|(&r, _)| r)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn group_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (start, stop) = (log.clone(), log.clone());
        let g = RegionGroup::new("model", ReclaimConfig {
            unspooled_hard_limit: 500,
            unspooled_soft_limit: 300,
            real_hard_limit: 700,
            start_reclaiming: Some(Arc::new(move || start.lock().unwrap().push(true))),
            stop_reclaiming: Some(Arc::new(move || stop.lock().unwrap().push(false))),
        });
        let mut m = Model { hard: 500, soft: 300, real_hard: 700, ..Default::default() };
        for op in ops {
            match op {
                // Events only for regions in the states logalloc would report.
                Op::Add(r, n) if !m.regions.contains_key(&r) => {
                    g.add(id(r), n);
                    m.regions.insert(r, (n, false, 0));
                }
                Op::Del(r) if m.regions.contains_key(&r) => {
                    let (total, ..) = m.regions.remove(&r).unwrap();
                    g.del(id(r), total);
                }
                Op::Increase(r, n) if m.regions.contains_key(&r) => {
                    g.increase_usage(id(r), n);
                    m.regions.get_mut(&r).unwrap().0 += n;
                }
                Op::Decrease(r, n) if m.regions.get(&r).is_some_and(|&(t, ..)| t >= n) => {
                    g.decrease_usage(id(r), n);
                    let e = m.regions.get_mut(&r).unwrap();
                    e.0 -= n;
                    e.2 = e.2.min(e.0);
                }
                Op::Merge(into, from)
                    if into != from && m.regions.contains_key(&into) && m.regions.contains_key(&from) =>
                {
                    let (moved, _, spooled) = m.regions.remove(&from).unwrap();
                    g.merged(id(into), id(from), moved);
                    let e = m.regions.get_mut(&into).unwrap();
                    e.0 += moved;
                    e.2 += spooled;
                }
                Op::Ground(r) if m.regions.contains_key(&r) => {
                    g.ground_evictable(id(r));
                    m.regions.get_mut(&r).unwrap().1 = true;
                }
                Op::Account(n) => {
                    let ok = m.spooled() + n <= m.real();
                    prop_assert_eq!(g.account_spooled(n).is_ok(), ok);
                    if ok {
                        m.spooled += n;
                    }
                }
                Op::AccountRegion(r, n) => {
                    let ok = m.spooled() + n <= m.real()
                        && m.regions.get(&r).is_some_and(|&(t, _, s)| s + n <= t);
                    prop_assert_eq!(g.account_region_spooled(id(r), n).is_ok(), ok);
                    if ok {
                        m.regions.get_mut(&r).unwrap().2 += n;
                    }
                }
                Op::RevertRegion(r, n) => {
                    let taken = m.regions.get_mut(&r).map_or(0, |e| {
                        let taken = n.min(e.2);
                        e.2 -= taken;
                        taken
                    });
                    prop_assert_eq!(g.revert_region_spooled(id(r), n), taken);
                }
                Op::Revert(n) => {
                    let ok = n <= m.spooled;
                    prop_assert_eq!(g.revert_spooled(n).is_ok(), ok);
                    if ok {
                        m.spooled -= n;
                    }
                }
                Op::Limits(hard, soft, real_hard) => {
                    g.update_limits(hard, soft, real_hard);
                    (m.hard, m.soft, m.real_hard) = (hard, soft, real_hard);
                }
                _ => continue,
            }
            m.check_soft();
            prop_assert_eq!(g.real_usage(), m.real());
            prop_assert_eq!(g.unspooled_usage(), m.unspooled());
            prop_assert_eq!(g.is_reclaiming(), m.reclaiming);
            prop_assert_eq!(&*log.lock().unwrap(), &m.log);
            prop_assert_eq!(
                g.execution_permitted(),
                m.unspooled() <= m.hard && m.real() <= m.real_hard
            );
            prop_assert_eq!(g.largest_flushable_region(), m.largest_flushable().map(id));
            prop_assert_eq!(g.region_count(), m.regions.len());
            prop_assert_eq!(g.spooled(), m.spooled());
            for (&r, &(total, grounded, spooled)) in &m.regions {
                prop_assert_eq!(g.region_size(id(r)), Some((total, grounded)));
                prop_assert_eq!(g.region_spooled(id(r)), Some(spooled));
            }
        }
    }
}
