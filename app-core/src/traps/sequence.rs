//! The sequence detector's pieces: a URL's *shape* (its path and query with every
//! run of digits replaced by `#`) and numbers, what a *step* is, and the ranges of
//! numbers seen per host and shape.
//!
//! A link is a step from the page it is on when both are on one host, have the
//! same shape, and differ in exactly one number by a small stride: at most
//! [`MAX_STRIDE`], or a multiple of 10 up to [`MAX_ROUND_STRIDE`] (offset pagers
//! step by a page size). `/list?page=7` -> `/list?page=8`, `/c/41` -> `/c/42`,
//! `/cal/2024/05/` -> `/cal/2025/05/`, `?start=20` -> `?start=40`.
//!
//! A step *extends* its shape when its number lies outside every value of that
//! position seen so far on the host (links and the pages they are on, once the
//! shape has had a step). Pagers, counters and month paging extend at every step;
//! an ordinary site, whose pages link each other all over the range, hardly ever.
//! [`HostShapes::step`] counts extending steps and refuses the ones over the limit.
//!
//! Memory: at most [`MAX_SHAPES`] shapes per host, each with at most
//! [`MAX_NUMBERS`] ranges; only shapes that had a step are kept. A URL with more
//! numbers, or a host past its shapes, is not tracked (its host budget still
//! bounds it). O(URL length) per link.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault};

use foldhash::fast::FixedState;
use pages::links::template::PassThrough;

/// Largest difference that is a step.
pub(crate) const MAX_STRIDE: u64 = 10;
/// Largest multiple of 10 that is a step.
pub(crate) const MAX_ROUND_STRIDE: u64 = 100;
/// Most numbers in a tracked URL.
pub(crate) const MAX_NUMBERS: usize = 8;
/// Most shapes tracked per host.
pub(crate) const MAX_SHAPES: usize = 16;
/// Longest digit run read as a number (longer ones are part of the shape).
const MAX_DIGITS: usize = 18;

/// A URL's shape (hashed) and numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    hash: u64,
    numbers: Vec<u64>,
}

impl Shape {
    /// The shape of `path_and_query` (`/list?page=12` -> `/list?page=#` and `12`);
    /// `None` when it holds more than [`MAX_NUMBERS`] numbers.
    pub(crate) fn of(path_and_query: &str) -> Option<Self> {
        let mut skeleton = Vec::with_capacity(path_and_query.len());
        let mut numbers = Vec::new();
        let bytes = path_and_query.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if !bytes[i].is_ascii_digit() {
                skeleton.push(bytes[i]);
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = &path_and_query[start..i];
            match digits.parse::<u64>() {
                Ok(n) if digits.len() <= MAX_DIGITS => {
                    if numbers.len() == MAX_NUMBERS {
                        return None;
                    }
                    numbers.push(n);
                    skeleton.push(b'#');
                }
                _ => skeleton.extend_from_slice(digits.as_bytes()),
            }
        }
        let hash = FixedState::default().hash_one(&skeleton);
        Some(Self { hash, numbers })
    }

    /// If `self` is one step from `page` (see the module docs): the position that
    /// differs.
    pub(crate) fn step_from(&self, page: &Shape) -> Option<usize> {
        if self.hash != page.hash || self.numbers.len() != page.numbers.len() {
            return None;
        }
        let mut differing = self
            .numbers
            .iter()
            .zip(&page.numbers)
            .enumerate()
            .filter(|(_, (a, b))| a != b);
        let (at, (a, b)) = differing.next()?;
        if differing.next().is_some() {
            return None;
        }
        let stride = a.abs_diff(*b);
        (stride <= MAX_STRIDE || (stride % 10 == 0 && stride <= MAX_ROUND_STRIDE)).then_some(at)
    }
}

/// The ranges seen of one shape on one host.
#[derive(Debug)]
struct Ranges {
    /// (lowest, highest) per number position.
    seen: Vec<(u64, u64)>,
    /// Steps that extended a range.
    steps: u32,
}

impl Ranges {
    fn new(numbers: &[u64]) -> Self {
        Self {
            seen: numbers.iter().map(|&n| (n, n)).collect(),
            steps: 0,
        }
    }

    fn widen(&mut self, numbers: &[u64]) {
        for (r, &n) in self.seen.iter_mut().zip(numbers) {
            r.0 = r.0.min(n);
            r.1 = r.1.max(n);
        }
    }
}

/// One host's tracked shapes.
#[derive(Debug, Default)]
pub(crate) struct HostShapes {
    /// Keyed by the shape's hash (already a hash: passed through).
    shapes: HashMap<u64, Ranges, BuildHasherDefault<PassThrough>>,
}

impl HostShapes {
    /// A link of this host with shape `link`, found on a page of this host with
    /// shape `page`: false when it is a step over `max_steps` (it is cut, and the
    /// ranges stay as they were).
    pub(crate) fn step(&mut self, link: &Shape, page: &Shape, max_steps: u32) -> bool {
        let Some(at) = link.step_from(page) else {
            // Not a step: it widens the ranges of a shape already tracked.
            if let Some(r) = self.shapes.get_mut(&link.hash)
                && r.seen.len() == link.numbers.len()
            {
                r.widen(&link.numbers);
            }
            return true;
        };
        if !self.shapes.contains_key(&link.hash) {
            if self.shapes.len() >= MAX_SHAPES {
                return true;
            }
            self.shapes.insert(link.hash, Ranges::new(&page.numbers));
        }
        let Some(r) = self.shapes.get_mut(&link.hash) else {
            return true;
        };
        r.widen(&page.numbers);
        let n = link.numbers[at];
        let (lo, hi) = r.seen[at];
        if (lo..=hi).contains(&n) {
            return true;
        }
        if r.steps >= max_steps {
            return false;
        }
        r.steps += 1;
        r.widen(&link.numbers);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(s: &str) -> Shape {
        Shape::of(s).unwrap()
    }

    #[test]
    fn shapes_and_steps() {
        let a = shape("/list?page=7");
        assert_eq!(a.numbers, vec![7]);
        assert_eq!(shape("/list?page=8").step_from(&a), Some(0));
        assert_eq!(shape("/list?page=17").step_from(&a), Some(0), "10");
        assert_eq!(shape("/list?page=18").step_from(&a), None, "11");
        assert_eq!(shape("/list?page=107").step_from(&a), Some(0), "100");
        assert_eq!(shape("/list?page=117").step_from(&a), None, "110");
        assert_eq!(shape("/list?page=7").step_from(&a), None, "same URL");
        assert_eq!(shape("/list?p=8").step_from(&a), None, "another shape");
        let m = shape("/cal/2024/12/");
        assert_eq!(shape("/cal/2025/12/").step_from(&m), Some(0));
        assert_eq!(shape("/cal/2024/11/").step_from(&m), Some(1));
        assert_eq!(shape("/cal/2025/01/").step_from(&m), None, "two differ");
        assert!(Shape::of("/1/2/3/4/5/6/7/8/9").is_none());
        let long = shape("/t/12345678901234567890");
        assert!(long.numbers.is_empty(), "too long to be a number");
    }

    #[test]
    fn a_pager_is_cut_after_its_steps_and_a_site_is_not() {
        // A pager: page n links n+1 ..= n+9 and n-1.
        let mut h = HostShapes::default();
        let mut followed = vec![1u64];
        let mut fetched = 0;
        while fetched < followed.len() && fetched < 10_000 {
            let n = followed[fetched];
            fetched += 1;
            let page = shape(&format!("/list?page={n}"));
            for k in (n + 1..=n + 9).chain((n > 1).then_some(n - 1)) {
                if h.step(&shape(&format!("/list?page={k}")), &page, 20) && !followed.contains(&k) {
                    followed.push(k);
                }
            }
        }
        assert_eq!(followed.iter().max(), Some(&21), "20 steps past page 1");
        // A site of 2,000 pages whose pages link each other all over the range
        // (and their neighbours): the ranges soon cover the links, so a step
        // hardly ever extends one.
        let mut s = HostShapes::default();
        let mut cut = 0;
        let mut x: u64 = 7;
        let mut next = |n: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % n
        };
        for _ in 0..2_000 {
            let p = next(2_000);
            let page = shape(&format!("/p{p}.html"));
            let links = [
                next(2_000),
                next(2_000),
                next(2_000),
                p + 1,
                p.saturating_sub(1),
            ];
            for k in links {
                if !s.step(&shape(&format!("/p{k}.html")), &page, 20) {
                    cut += 1;
                }
            }
        }
        assert_eq!(cut, 0);
    }
}
