//! Who holds which seed: the URL distributor of SCrawler's Figure 5, or free
//! competition (the paper's baseline), as a switch.
//!
//! Pure bookkeeping over worker numbers and seed counts; it never looks at pages.
//! Memory O(workers).
//!
//! - **Distributor**: while the seed queue has seeds, deal them to the workers in
//!   turn, each worker that is not full (holds fewer than `m`) getting one per
//!   round. Once the queue is empty, while the worker holding the fewest seeds holds
//!   fewer than the average, move one *inactive* seed (held, nothing in flight)
//!   from the worker holding the most to it.
//! - **Free competition**: workers take seeds as threads do, between their own
//!   fetches: a worker gets a *turn* each time one of its requests comes back (a
//!   page or an outcome), and once per pass of the loop while it has nothing in
//!   flight (a thread with nothing to fetch looks at the queue); turns are taken
//!   in the order they came, and a turn takes at most one seed, if the worker is
//!   not full. So a worker whose parties answer fast gathers seeds while one
//!   whose few parties answer slowly (or not at all: every request still in
//!   flight) waits: the start-up starvation of the paper's free-running threads
//!   (its Figure 8). Nothing is ever moved.

use std::collections::VecDeque;

/// How seeds reach workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// SCrawler's URL distributor (Figure 5): deal in turn, then rebalance.
    #[default]
    Distributor,
    /// Workers take seeds from the queue themselves; no rebalancing.
    Free,
}

impl std::str::FromStr for Balance {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "distributor" => Ok(Self::Distributor),
            "free" => Ok(Self::Free),
            other => Err(format!("unknown balance {other:?} (distributor or free)")),
        }
    }
}

impl std::fmt::Display for Balance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Distributor => "distributor",
            Self::Free => "free",
        })
    }
}

/// One decision of [`plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// Give the next queued seed to this worker.
    Deal(usize),
    /// Move an inactive seed from the first worker to the second.
    Shift(usize, usize),
}

/// The next move, if any, given the seeds each worker `held`, how many of them are
/// `inactive`, the queue length, `m` and, for free competition, the workers'
/// `turns` in the order they came (each used up by a deal or by finding its worker
/// full). Call again after applying it.
pub fn plan(
    balance: Balance,
    held: &[usize],
    inactive: &[usize],
    queued: usize,
    m: usize,
    turn: &mut usize,
    turns: &mut VecDeque<usize>,
) -> Option<Move> {
    let n = held.len();
    if n == 0 {
        return None;
    }
    if queued > 0 {
        return match balance {
            // In turn from where the last deal stopped: seeds go round the workers.
            Balance::Distributor => {
                (0..n)
                    .map(|i| (*turn + i) % n)
                    .find(|&w| held[w] < m)
                    .map(|w| {
                        *turn = (w + 1) % n;
                        Move::Deal(w)
                    })
            }
            Balance::Free => {
                while let Some(w) = turns.pop_front() {
                    if held.get(w).is_some_and(|&h| h < m) {
                        return Some(Move::Deal(w));
                    }
                }
                None
            }
        };
    }
    if balance == Balance::Free {
        return None;
    }
    let total: usize = held.iter().sum();
    let (min_w, &min) = held.iter().enumerate().min_by_key(|(_, h)| **h)?;
    // The worker with the most seeds that has one to give.
    let (max_w, &max) = held
        .iter()
        .enumerate()
        .filter(|(w, _)| inactive.get(*w).copied().unwrap_or(0) > 0)
        .max_by_key(|(_, h)| **h)?;
    // min < average, in integers: min * n < total. Moving must make it better.
    if min * n < total && max > min + 1 {
        Some(Move::Shift(max_w, min_w))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_in_turn_until_full() {
        let mut held = vec![0, 0, 0];
        let mut turn = 0;
        let mut order = Vec::new();
        let mut queued = 7;
        while let Some(Move::Deal(w)) = plan(
            Balance::Distributor,
            &held,
            &[0, 0, 0],
            queued,
            2,
            &mut turn,
            &mut VecDeque::new(),
        ) {
            held[w] += 1;
            queued -= 1;
            order.push(w);
        }
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(queued, 1);
    }

    #[test]
    fn free_competition_deals_by_turns_in_their_order_and_never_shifts() {
        let mut turn = 0;
        // Worker 2's responses came back twice, then worker 0's; worker 1 had no
        // turn (its requests are all in flight): it gets nothing.
        let mut turns: VecDeque<usize> = [2, 2, 0].into();
        let mut held = vec![0, 0, 1];
        let mut order = Vec::new();
        while let Some(Move::Deal(w)) = plan(
            Balance::Free,
            &held,
            &[0, 0, 0],
            5,
            2,
            &mut turn,
            &mut turns,
        ) {
            held[w] += 1;
            order.push(w);
        }
        // Worker 2 is full after one seed (m = 2): its second turn passes.
        assert_eq!(order, vec![2, 0]);
        assert_eq!(held, vec![1, 0, 2]);
        assert!(turns.is_empty());
        // No turn, no seed, however many are queued; and nothing is shifted.
        assert_eq!(
            plan(
                Balance::Free,
                &[9, 0],
                &[9, 0],
                3,
                10,
                &mut turn,
                &mut turns
            ),
            None
        );
        assert_eq!(
            plan(
                Balance::Free,
                &[9, 0],
                &[9, 0],
                0,
                10,
                &mut turn,
                &mut [1].into()
            ),
            None
        );
    }

    #[test]
    fn shifts_from_most_to_fewest_while_fewest_is_below_average() {
        let mut turn = 0;
        // avg 10/3; min 0 < avg: move from the worker with 7.
        assert_eq!(
            plan(
                Balance::Distributor,
                &[7, 3, 0],
                &[5, 1, 0],
                0,
                10,
                &mut turn,
                &mut VecDeque::new()
            ),
            Some(Move::Shift(0, 2))
        );
        // Balanced (4, 3, 3): min 3 * 3 = 9 < 10, but 4 > 3 + 1 is false: stop.
        assert_eq!(
            plan(
                Balance::Distributor,
                &[4, 3, 3],
                &[4, 3, 3],
                0,
                10,
                &mut turn,
                &mut VecDeque::new()
            ),
            None
        );
        // Nothing inactive at the top: the next one that has some gives.
        assert_eq!(
            plan(
                Balance::Distributor,
                &[7, 5, 0],
                &[0, 2, 0],
                0,
                10,
                &mut turn,
                &mut VecDeque::new()
            ),
            Some(Move::Shift(1, 2))
        );
        assert_eq!(
            plan(
                Balance::Distributor,
                &[7, 5, 0],
                &[0, 0, 0],
                0,
                10,
                &mut turn,
                &mut VecDeque::new()
            ),
            None
        );
    }
}
