//! Shares that follow a backlog: the piecewise-linear curves of
//! ScyllaDB's backlog controllers, re-evaluated by their owner (every
//! 50 ms in ScyllaDB) and handed to [`IoQueue::set_shares`](crate::IoQueue::set_shares).

use crate::Error;

/// A piecewise-linear map from a backlog (a fraction, 0 = nothing to do)
/// to shares: linear between its control points, flat before the first
/// and after the last.
#[derive(Debug, Clone, PartialEq)]
pub struct SharesCurve {
    points: Vec<(f64, u32)>,
}

impl SharesCurve {
    /// A curve through `points` (backlog, shares), backlogs strictly
    /// increasing.
    ///
    /// # Errors
    /// [`Error::BadCurve`] for no point, a backlog that is not finite or
    /// not above the one before it.
    pub fn new(points: &[(f64, u32)]) -> Result<Self, Error> {
        if points.is_empty() {
            return Err(Error::BadCurve {
                reason: "no control point",
            });
        }
        if points.iter().any(|(x, _)| !x.is_finite()) {
            return Err(Error::BadCurve {
                reason: "a backlog that is not a finite number",
            });
        }
        if points.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(Error::BadCurve {
                reason: "backlogs must increase from one point to the next",
            });
        }
        Ok(SharesCurve {
            points: points.to_vec(),
        })
    }

    /// ScyllaDB's memtable flush controller: the backlog is unspooled
    /// dirty memory over the hard limit, and `soft` the soft limit as a
    /// fraction of it: 0 shares with nothing dirty, 10 at the soft limit,
    /// 200 halfway from there to the hard limit, 1000 at it. (The queue
    /// gives a class at least 1 share, so 0 is 1.)
    ///
    /// # Errors
    /// [`Error::BadCurve`] unless `0 < soft < 1`.
    pub fn flush(soft: f64) -> Result<Self, Error> {
        if !(soft > 0.0 && soft < 1.0) {
            return Err(Error::BadCurve {
                reason: "the soft limit must be a fraction of the hard limit in (0, 1)",
            });
        }
        Self::new(&[
            (0.0, 0),
            (soft, 10),
            (soft + (1.0 - soft) / 2.0, 200),
            (1.0, 1000),
        ])
    }

    /// The shares at `backlog` (NaN counts as no backlog).
    pub fn shares(&self, backlog: f64) -> u32 {
        let x = if backlog.is_nan() { 0.0 } else { backlog };
        let first = self.points[0];
        if x <= first.0 {
            return first.1;
        }
        for w in self.points.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            if x <= x1 {
                let t = (x - x0) / (x1 - x0);
                let y = f64::from(y0) + t * (f64::from(y1) - f64::from(y0));
                return y.round() as u32;
            }
        }
        self.points[self.points.len() - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_curve_passes_through_scyllas_points() {
        let c = SharesCurve::flush(0.25).unwrap();
        assert_eq!(c.shares(0.0), 0);
        assert_eq!(c.shares(0.25), 10);
        assert_eq!(c.shares(0.625), 200);
        assert_eq!(c.shares(1.0), 1000);
        assert_eq!(c.shares(2.0), 1000, "flat past the hard limit");
        assert_eq!(c.shares(-1.0), 0);
        assert_eq!(c.shares(f64::NAN), 0);
        // Linear in between: halfway from the soft limit to its midpoint.
        assert_eq!(c.shares(0.4375), 105);
        // Never decreasing.
        let mut last = 0;
        for i in 0..=1000 {
            let s = c.shares(f64::from(i) / 1000.0);
            assert!(s >= last);
            last = s;
        }
    }

    #[test]
    fn bad_curves_are_refused_with_the_reason() {
        assert!(SharesCurve::new(&[]).is_err());
        assert_eq!(
            SharesCurve::new(&[(0.5, 1), (0.5, 2)])
                .unwrap_err()
                .to_string(),
            "bad shares curve: backlogs must increase from one point to the next"
        );
        assert!(SharesCurve::new(&[(f64::INFINITY, 1)]).is_err());
        for soft in [0.0, 1.0, -0.5, f64::NAN] {
            assert!(SharesCurve::flush(soft).is_err(), "{soft}");
        }
        assert_eq!(SharesCurve::new(&[(0.3, 7)]).unwrap().shares(9.0), 7);
    }
}
