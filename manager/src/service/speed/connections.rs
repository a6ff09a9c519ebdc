//! [`plan`]: how many connections each downloader needs for the speed target.
//!
//! Little's law: a downloader that is to finish `x` jobs per second, each out `w`
//! seconds on average (dispatch to report), holds `x * w` of them at once on
//! average; it gets `headroom` times that in connections, so bursts and slow hosts
//! seldom fill them and jobs seldom wait in its queue.
//!
//! The target is split by water-filling: every downloader gets an equal share,
//! except that a downloader whose cap (`max_connections`) cannot carry its share
//! gets what the cap carries, and the rest is shared among the others. So a
//! downloader on a slow link gets more connections for the same share, up to the
//! cap, and the others make up what it cannot do. A downloader not measured yet
//! is planned with the mean job time of those that are. The split of the actual
//! work balances itself: dispatch gives jobs to the downloader with the most free
//! room, so one that finishes its jobs sooner is given more of them.
//!
//! Pure arithmetic: this module must never send anything or read a clock.
//! Cost: O(n log n) for n downloaders.

/// Jobs faster than this count as this (a job is never free).
const MIN_FETCH_SECS: f64 = 0.001;

/// The bounds of a plan (from `manager.speed`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bounds {
    /// Fewest connections per downloader.
    pub min: u32,
    /// Most connections per downloader: the absolute cap.
    pub max: u32,
    /// Multiple of what Little's law asks for.
    pub headroom: f64,
}

/// Connections for each downloader, and whether the caps keep the plan from
/// carrying the whole target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Connections per downloader, in the order they were given.
    pub connections: Vec<u32>,
    /// The caps carry less than the target.
    pub capped: bool,
}

/// The plan for `target` jobs per second over downloaders whose mean job times
/// (seconds) are `fetch_secs` (`None`: not measured yet). `None` when no
/// downloader is measured: then nothing is known to plan with.
pub(crate) fn plan(target: f64, bounds: Bounds, fetch_secs: &[Option<f64>]) -> Option<Plan> {
    let measured: Vec<f64> = fetch_secs.iter().flatten().copied().collect();
    if measured.is_empty() {
        return None;
    }
    let fallback = measured.iter().sum::<f64>() / measured.len() as f64;
    let secs: Vec<f64> = fetch_secs
        .iter()
        .map(|s| s.unwrap_or(fallback).max(MIN_FETCH_SECS))
        .collect();
    let max = f64::from(bounds.max);
    // The most fetches per second downloader i carries at its cap.
    let most = |i: usize| max / (secs[i] * bounds.headroom);
    let mut order: Vec<usize> = (0..secs.len()).collect();
    order.sort_by(|&a, &b| most(a).total_cmp(&most(b)));
    let mut connections = vec![bounds.min; secs.len()];
    let mut remaining = target.max(0.0);
    for (k, &i) in order.iter().enumerate() {
        let share = remaining / (order.len() - k) as f64;
        let given = share.min(most(i));
        remaining -= given;
        // Less a hair, so that a product like 20.000000000000004 asks for 20.
        let needed = (given * secs[i] * bounds.headroom - 1e-9).ceil();
        // Clamped to the bounds: the cast cannot truncate.
        connections[i] = needed.clamp(f64::from(bounds.min), max) as u32;
    }
    Some(Plan {
        connections,
        capped: remaining > target * 1e-9,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        min: 4,
        max: 100,
        headroom: 2.0,
    };

    #[test]
    fn littles_law_with_headroom_split_equally() {
        // 200/s over two downloaders at 50 ms: 100/s x 0.05 s x 2 = 10 each.
        let p = plan(200.0, B, &[Some(0.05), Some(0.05)]).unwrap();
        assert_eq!(p.connections, [10, 10]);
        assert!(!p.capped);
        // A slower downloader gets more connections for the same share.
        let p = plan(200.0, B, &[Some(0.05), Some(0.2)]).unwrap();
        assert_eq!(p.connections, [10, 40]);
        // Never below the floor.
        let p = plan(10.0, B, &[Some(0.01), Some(0.01)]).unwrap();
        assert_eq!(p.connections, [4, 4]);
    }

    #[test]
    fn a_capped_downloader_hands_the_rest_to_the_others() {
        // The slow one carries at most 100 / (1 s x 2) = 50/s; the fast one the
        // other 150/s: 150 x 0.1 x 2 = 30.
        let p = plan(200.0, B, &[Some(0.1), Some(1.0)]).unwrap();
        assert_eq!(p.connections, [30, 100]);
        assert!(!p.capped);
        // Both capped: the plan says it cannot carry the target.
        let p = plan(10_000.0, B, &[Some(0.1), Some(1.0)]).unwrap();
        assert_eq!(p.connections, [100, 100]);
        assert!(p.capped);
    }

    #[test]
    fn unmeasured_downloaders_take_the_mean_and_none_measured_means_no_plan() {
        let p = plan(200.0, B, &[Some(0.05), None, Some(0.15)]).unwrap();
        // 66.7/s each: x 0.05 x 2 = 6.7 -> 7; x 0.1 x 2 = 13.3 -> 14; x 0.15 x 2 = 20.
        assert_eq!(p.connections, [7, 14, 20]);
        assert_eq!(plan(200.0, B, &[None, None]), None);
        assert_eq!(plan(200.0, B, &[]), None);
        // A zero job time counts as 1 ms.
        let p = plan(10_000.0, B, &[Some(0.0)]).unwrap();
        assert_eq!(p.connections, [20]);
    }
}
