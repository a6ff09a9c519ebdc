//! [`TargetPlan`]: the speed target in force, worked out from the operator's
//! override, the time-of-day schedule and the configured base (see the
//! [`speed`](super) module docs, "The target in force").
//!
//! This module must never measure anything nor set connection counts: it only says
//! which pages/s target holds at a wall-clock time, and until when. Cost: O(windows
//! of the schedule) when the target is worked out again, at most once per boundary.

use spool::protocol::TargetSource;

use crate::service::config::schedule::Schedule;

/// A speed target and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Target {
    /// Pages (fetches) per second.
    pub pages_per_sec: f64,
    /// Config, schedule or operator.
    pub source: TargetSource,
    /// When the schedule may change it next (wall-clock ms); `None`: never.
    pub until_ms: Option<u64>,
}

/// An operator's target.
#[derive(Debug, Clone, Copy)]
struct Operator {
    pages_per_sec: f64,
    until_ms: Option<u64>,
}

/// The target in force and what it is worked out from. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct TargetPlan {
    schedule: Schedule,
    base: f64,
    operator: Option<Operator>,
    target: Target,
    /// Wall-clock ms at which the target must be worked out again.
    next_check_ms: u64,
}

impl TargetPlan {
    /// The plan of `schedule` over the base target `base` (pages/s), in force until
    /// the first [`refresh`](Self::refresh).
    pub fn new(schedule: Schedule, base: f64) -> TargetPlan {
        TargetPlan {
            schedule,
            base,
            operator: None,
            target: Target {
                pages_per_sec: base,
                source: TargetSource::Config,
                until_ms: None,
            },
            next_check_ms: 0,
        }
    }

    /// The target in force at `wall`; `Some` when it differs from the last one.
    pub fn refresh(&mut self, wall: u64) -> Option<Target> {
        if wall < self.next_check_ms {
            return None;
        }
        let target = self.work_out(wall);
        self.next_check_ms = target.until_ms.unwrap_or(u64::MAX);
        let changed = target != self.target;
        self.target = target;
        changed.then_some(target)
    }

    fn work_out(&mut self, wall: u64) -> Target {
        if let Some(op) = self.operator {
            if op.until_ms.is_none_or(|until| wall < until) {
                return Target {
                    pages_per_sec: op.pages_per_sec,
                    source: TargetSource::Operator,
                    until_ms: op.until_ms,
                };
            }
            self.operator = None;
        }
        let until_ms = self.schedule.next_boundary(wall);
        match self.schedule.window_at(wall) {
            Some(w) => Target {
                pages_per_sec: w.pages_per_sec,
                source: TargetSource::Schedule,
                until_ms,
            },
            None => Target {
                pages_per_sec: self.base,
                source: TargetSource::Config,
                until_ms,
            },
        }
    }

    /// An operator's target, from `wall` to the schedule's next boundary.
    pub fn set_operator(&mut self, pages_per_sec: f64, wall: u64) -> Target {
        self.operator = Some(Operator {
            pages_per_sec,
            until_ms: self.schedule.next_boundary(wall),
        });
        self.next_check_ms = 0;
        self.refresh(wall);
        self.target
    }

    /// The target in force.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Wall-clock ms at which the target must be worked out again.
    pub fn next_check_ms(&self) -> u64 {
        self.next_check_ms
    }
}
