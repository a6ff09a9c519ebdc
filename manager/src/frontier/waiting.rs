//! The waiting queue: a min-heap of hosts (and other timers) keyed by the wall-clock
//! millisecond at which they may be looked at again (Polybot section 3.4). `tick`
//! pops everything due and the frontier decides what each host does next.
//!
//! Like the ready heap, entries are deleted lazily: the frontier re-checks the host's
//! state and `next_allowed_ms` when an entry comes due and ignores stale ones. O(log n)
//! per operation, at most a few entries per host. This module must never look at
//! hosts; it only orders ids by time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Min-heap of `(due_ms, id)`.
#[derive(Debug)]
pub(crate) struct TimerHeap<T: Ord> {
    heap: BinaryHeap<Reverse<(u64, T)>>,
}

impl<T: Ord> Default for TimerHeap<T> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
        }
    }
}

impl<T: Ord + Copy> TimerHeap<T> {
    pub fn push(&mut self, due_ms: u64, id: T) {
        self.heap.push(Reverse((due_ms, id)));
    }

    /// Pops the earliest entry if it is due at `now_ms`.
    pub fn pop_due(&mut self, now_ms: u64) -> Option<(u64, T)> {
        match self.heap.peek() {
            Some(Reverse((due, _))) if *due <= now_ms => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }

    /// The earliest due time.
    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((due, _))| *due)
    }

    /// Entries, stale ones included.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_only_what_is_due_in_time_order() {
        let mut w = TimerHeap::default();
        w.push(300, 1u64);
        w.push(100, 2);
        w.push(200, 3);
        assert_eq!(w.next_due(), Some(100));
        assert_eq!(w.pop_due(99), None);
        assert_eq!(w.pop_due(250), Some((100, 2)));
        assert_eq!(w.pop_due(250), Some((200, 3)));
        assert_eq!(w.pop_due(250), None);
        assert_eq!(w.len(), 1);
    }
}
