//! The two-level crawl's cost model (FC2L-UDC section 5, its equations 2-4 and
//! figures 9-12), with parameters measured from this crawler's runs
//! (`polycrawl cost-model`, `ops/bench-two-level.sh`).
//!
//! The paper writes an agent's speed as the single machine's minus overheads in
//! pages/s (Eq. 2: fixed setup + site URL sending + site partition information +
//! page URL exchange; Eq. 3: speed per agent = single speed - total overhead) and
//! the crawl time as pages over n times that speed (Eq. 4). Its overheads are
//! curves fitted to its own runs (e.g. 4.39 (n-1) + 5.5 log2 m for the exchange).
//! Here each overhead is built from what it is made of, per page, so that the
//! parameters come from a run's counters rather than a fit:
//!
//! - an agent spends `1 / single` seconds a page on the network (paced), plus
//!   `reports * report_s` reporting sites, `assignments * assignment_s` reading
//!   assignments (every agent reads every site's line) and `exchanged *
//!   exchange_s` sending and receiving URLs (the coverage fix; 0 for plain 2L);
//!   its speed is the inverse of the sum (Eq. 3), its overhead `single` minus
//!   that (Eq. 2);
//! - the largest agent holds `balance` times the mean share, so the crawl's
//!   agents end after `fixed_s + pages * balance / (n * speed)` (Eq. 4 with a
//!   fixed start and end, which the paper's FixedOverhead stands for);
//! - the coordinator handles `reports + assignments` messages a page at
//!   `coordinator_s` each and bounds the crawl at `pages * that` seconds.
//!
//! The model is closed-form: O(1) per agent count. This module must never
//! read a crawl: it is given the figures.

/// What the model is given (see the module docs). Rates per stored page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostParams {
    /// Pages/s of one agent alone (its paced network rate).
    pub single: f64,
    /// Start and end of a run, seconds, whatever its size.
    pub fixed_s: f64,
    /// Site reports per page (all agents).
    pub reports: f64,
    /// Site assignments per page (distinct sites over pages; each agent reads all).
    pub assignments: f64,
    /// URLs exchanged between agents per page.
    pub exchanged: f64,
    /// An agent's seconds per site report written.
    pub report_s: f64,
    /// An agent's seconds per assignment line read.
    pub assignment_s: f64,
    /// An agent's seconds per URL exchanged (sent or received).
    pub exchange_s: f64,
    /// The coordinator's seconds per message (report line or assignment).
    pub coordinator_s: f64,
    /// The largest agent's pages over the mean (1.0: even).
    pub balance: f64,
}

/// The model's answer for `n` agents.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// Agents.
    pub agents: u32,
    /// Pages/s lost per agent to the overheads (Eq. 2).
    pub overhead: f64,
    /// Pages/s of one agent (Eq. 3).
    pub per_agent: f64,
    /// Crawl time in seconds (Eq. 4, with the fixed part and the balance).
    pub crawl_s: f64,
    /// Pages/s of the whole crawl.
    pub speed: f64,
    /// Crawl time with one agent over crawl time with `agents`.
    pub speed_up: f64,
    /// Whether the coordinator, not the agents, sets the time.
    pub coordinator_bound: bool,
}

/// Why the model cannot answer.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CostError {
    /// A parameter out of its range.
    #[error("cost model: {field} must be {want}, not {value}")]
    Param {
        /// The parameter.
        field: &'static str,
        /// Its range, in words.
        want: &'static str,
        /// What was given.
        value: f64,
    },
}

impl CostParams {
    /// Checks the ranges: `single` and `balance >= 1` positive, the rest not
    /// negative, everything finite.
    pub fn check(&self) -> Result<(), CostError> {
        let bad = |field, want, value: f64| Err(CostError::Param { field, want, value });
        if !(self.single.is_finite() && self.single > 0.0) {
            return bad("single", "positive", self.single);
        }
        if !(self.balance.is_finite() && self.balance >= 1.0) {
            return bad("balance", "at least 1", self.balance);
        }
        for (field, v) in [
            ("fixed_s", self.fixed_s),
            ("reports", self.reports),
            ("assignments", self.assignments),
            ("exchanged", self.exchanged),
            ("report_s", self.report_s),
            ("assignment_s", self.assignment_s),
            ("exchange_s", self.exchange_s),
            ("coordinator_s", self.coordinator_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, "finite and not negative", v);
            }
        }
        Ok(())
    }

    /// An agent's seconds per page with the overheads (the inverse of Eq. 3).
    fn agent_s_per_page(&self) -> f64 {
        1.0 / self.single
            + self.reports * self.report_s
            + self.assignments * self.assignment_s
            + self.exchanged * self.exchange_s
    }

    /// The crawl time of `pages` with `n` agents and whether the coordinator
    /// bounds it. One agent is the unsplit crawl: no coordinator, no overhead.
    fn time(&self, pages: f64, n: u32) -> (f64, bool) {
        if n <= 1 {
            return (self.fixed_s + pages / self.single, false);
        }
        let agents =
            self.fixed_s + pages * self.balance / (f64::from(n) * (1.0 / self.agent_s_per_page()));
        let coordinator =
            self.fixed_s + pages * (self.reports + self.assignments) * self.coordinator_s;
        (agents.max(coordinator), coordinator > agents)
    }

    /// The prediction for `pages` pages and `n` agents (`n >= 1`).
    pub fn predict(&self, pages: f64, n: u32) -> Result<Prediction, CostError> {
        self.check()?;
        if !(pages.is_finite() && pages > 0.0) {
            return Err(CostError::Param {
                field: "pages",
                want: "positive",
                value: pages,
            });
        }
        let n = n.max(1);
        let per_agent = if n == 1 {
            self.single
        } else {
            1.0 / self.agent_s_per_page()
        };
        let (crawl_s, coordinator_bound) = self.time(pages, n);
        let (one, _) = self.time(pages, 1);
        Ok(Prediction {
            agents: n,
            overhead: self.single - per_agent,
            per_agent,
            crawl_s,
            speed: pages / crawl_s,
            speed_up: one / crawl_s,
            coordinator_bound,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> CostParams {
        CostParams {
            single: 100.0,
            fixed_s: 10.0,
            reports: 0.0,
            assignments: 0.0,
            exchanged: 0.0,
            report_s: 0.0,
            assignment_s: 0.0,
            exchange_s: 0.0,
            coordinator_s: 0.0,
            balance: 1.0,
        }
    }

    #[test]
    fn without_overheads_speed_up_is_linear_but_for_the_fixed_part() {
        let p = params();
        let one = p.predict(10_000.0, 1).unwrap();
        assert_eq!((one.crawl_s, one.speed_up, one.overhead), (110.0, 1.0, 0.0));
        let four = p.predict(10_000.0, 4).unwrap();
        assert!((four.crawl_s - 35.0).abs() < 1e-9, "{four:?}");
        assert!((four.speed_up - 110.0 / 35.0).abs() < 1e-9);
        let p0 = CostParams { fixed_s: 0.0, ..p };
        assert!((p0.predict(10_000.0, 7).unwrap().speed_up - 7.0).abs() < 1e-9);
    }

    #[test]
    fn overheads_cost_pages_per_second_and_balance_stretches_the_time() {
        // 0.5 URLs exchanged a page at 2 ms each: 10 ms + 1 ms a page.
        let p = CostParams {
            fixed_s: 0.0,
            exchanged: 0.5,
            exchange_s: 0.002,
            balance: 1.1,
            ..params()
        };
        let two = p.predict(1_000.0, 2).unwrap();
        assert!((two.per_agent - 1.0 / 0.011).abs() < 1e-9);
        assert!((two.overhead - (100.0 - 1.0 / 0.011)).abs() < 1e-9);
        assert!((two.crawl_s - 1_000.0 * 1.1 * 0.011 / 2.0).abs() < 1e-9);
        assert!(!two.coordinator_bound);
        // Plain 2L exchanges nothing: faster than the fix.
        let plain = CostParams {
            exchanged: 0.0,
            ..p
        };
        assert!(plain.predict(1_000.0, 2).unwrap().crawl_s < two.crawl_s);
    }

    #[test]
    fn a_slow_coordinator_bounds_the_crawl() {
        let p = CostParams {
            fixed_s: 0.0,
            reports: 0.1,
            assignments: 0.1,
            coordinator_s: 0.01,
            ..params()
        };
        // Agents: 1000 / (8 * 100) = 1.25 s; coordinator: 1000 * 0.2 * 0.01 = 2 s.
        let eight = p.predict(1_000.0, 8).unwrap();
        assert!(eight.coordinator_bound);
        assert!((eight.crawl_s - 2.0).abs() < 1e-9);
        assert!(!p.predict(1_000.0, 2).unwrap().coordinator_bound);
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let e = CostParams {
            single: 0.0,
            ..params()
        }
        .predict(1.0, 2);
        assert!(matches!(
            e,
            Err(CostError::Param {
                field: "single",
                ..
            })
        ));
        let e = CostParams {
            balance: 0.9,
            ..params()
        }
        .predict(1.0, 2);
        assert!(matches!(
            e,
            Err(CostError::Param {
                field: "balance",
                ..
            })
        ));
        let e = CostParams {
            exchange_s: -1.0,
            ..params()
        }
        .predict(1.0, 2);
        assert!(matches!(
            e,
            Err(CostError::Param {
                field: "exchange_s",
                ..
            })
        ));
        let e = params().predict(f64::NAN, 2);
        assert!(matches!(e, Err(CostError::Param { field: "pages", .. })));
    }
}
