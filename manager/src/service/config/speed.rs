//! [`SpeedConfig`]: the `manager.speed: (...)` section, how the manager meets its
//! pages/s target: the time-of-day schedule and the bounds of each downloader's
//! connection count.
//!
//! File layer of the two-layer config (STYLE.md habit 6): serde with
//! `deny_unknown_fields` and a default for every field; [`SpeedConfig::validate`]
//! names the field at fault as `manager.speed.<field>` and, for the schedule, the
//! entry by its position. The base target itself stays
//! `manager.frontier.target_pages_per_sec` (it also sizes the ready queue). This
//! module must never read a clock: the schedule is evaluated in `schedule.rs`.

use serde::{Deserialize, Serialize};

use super::schedule::Schedule;
use crate::service::config::InvalidConfig;

/// The largest connection count a downloader accepts (its `concurrency` bound).
pub const MAX_CONNECTIONS: u32 = 100_000;

/// How the manager meets its speed target (DESIGN.md section 4, speed control).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpeedConfig {
    /// Time-of-day targets, in UTC: within an entry's window its `pages_per_sec`
    /// is the target, outside every window `frontier.target_pages_per_sec` is.
    /// Windows may wrap past midnight and must not overlap. An operator's
    /// `SetSpeed` holds until the next window boundary. Default empty.
    pub schedule: Vec<ScheduleEntry>,
    /// The fewest connections the manager gives a downloader, whatever the
    /// target: a few slow or hanging fetches must not take every connection (jobs
    /// would wait in the downloader's queue, then start late and bunched up).
    /// Default 32.
    pub min_connections: u32,
    /// The absolute cap on one downloader's connections: the manager never asks
    /// for more, whatever the target needs. Default 1,000 (Polybot's figure).
    pub max_connections: u32,
    /// Connections per downloader are `headroom x its share of the target x its
    /// mean job time` (Little's law; a job's time runs from dispatch to report),
    /// with room for bursts, so jobs seldom wait in a downloader. Default 2.
    pub connection_headroom: f64,
    /// How often connection counts are recomputed (and the speed diagnosis, which
    /// the status shows, refreshed). Default 2,000.
    pub adjust_interval_ms: u64,
}

/// One window of the time-of-day schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEntry {
    /// Start, `"HH:MM"` UTC (inclusive).
    pub from: String,
    /// End, `"HH:MM"` UTC (exclusive); earlier than `from` wraps past midnight.
    pub to: String,
    /// The target within the window.
    pub pages_per_sec: f64,
}

impl Default for SpeedConfig {
    fn default() -> Self {
        Self {
            schedule: Vec::new(),
            min_connections: 32,
            max_connections: 1_000,
            connection_headroom: 2.0,
            adjust_interval_ms: 2_000,
        }
    }
}

impl SpeedConfig {
    /// Checks the values; the error names the field as `manager.speed.<field>`.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let invalid = |field: &'static str, message: String| Err(InvalidConfig { field, message });
        Schedule::parse(&self.schedule)?;
        if !(1..=MAX_CONNECTIONS).contains(&self.max_connections) {
            return invalid(
                "manager.speed.max_connections",
                format!("must be 1 to {MAX_CONNECTIONS}"),
            );
        }
        if !(1..=self.max_connections).contains(&self.min_connections) {
            return invalid(
                "manager.speed.min_connections",
                "must be 1 to manager.speed.max_connections".to_owned(),
            );
        }
        let headroom = self.connection_headroom;
        if !(headroom.is_finite() && (1.0..=100.0).contains(&headroom)) {
            return invalid(
                "manager.speed.connection_headroom",
                "must be a number from 1 to 100".to_owned(),
            );
        }
        if !(100..=3_600_000).contains(&self.adjust_interval_ms) {
            return invalid(
                "manager.speed.adjust_interval_ms",
                "must be 100 to 3600000".to_owned(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_errors_name_the_field() {
        SpeedConfig::default().validate().unwrap();
        let c: SpeedConfig = ron::from_str(
            r#"(schedule: [(from: "22:00", to: "06:00", pages_per_sec: 500.0)], max_connections: 64)"#,
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.min_connections, 32);
        assert!(ron::from_str::<SpeedConfig>("(max_conns: 8)").is_err());
        assert!(
            ron::from_str::<SpeedConfig>(r#"(schedule: [(from: "1:00", to: "2:00")])"#).is_err(),
            "pages_per_sec is required"
        );
        let field = |c: SpeedConfig| c.validate().unwrap_err().field;
        let base = SpeedConfig::default;
        assert_eq!(
            field(SpeedConfig {
                min_connections: 2_000,
                ..base()
            }),
            "manager.speed.min_connections"
        );
        assert_eq!(
            field(SpeedConfig {
                max_connections: 0,
                ..base()
            }),
            "manager.speed.max_connections"
        );
        assert_eq!(
            field(SpeedConfig {
                connection_headroom: f64::NAN,
                ..base()
            }),
            "manager.speed.connection_headroom"
        );
        assert_eq!(
            field(SpeedConfig {
                adjust_interval_ms: 0,
                ..base()
            }),
            "manager.speed.adjust_interval_ms"
        );
        let bad = SpeedConfig {
            schedule: vec![ScheduleEntry {
                from: "24:00".into(),
                to: "06:00".into(),
                pages_per_sec: 1.0,
            }],
            ..base()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!(e.field, "manager.speed.schedule");
        assert!(e.message.contains("entry 1"), "{e}");
    }
}
