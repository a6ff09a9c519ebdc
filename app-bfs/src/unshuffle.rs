//! The k-way unshuffle (Polybot section 3.3): a batch of new URLs arrives sorted by
//! host-reversed key, so a registered domain's URLs (all its hosts: `www.acme.test`,
//! `shop.acme.test`) are adjacent; dealt round-robin into piles and the piles
//! concatenated, they are spread over the whole request stream, so one domain's many
//! hosts (often one organisation's servers) are not hit together and the manager's
//! host queues fill evenly.
//!
//! The group is the *registered domain* ([`key_domain`]: the public suffix plus one
//! label, from the list the `psl` crate compiles in; an IP address is its own
//! group). A batch is dealt into `min(k, longest run of one domain)` piles: the
//! fewest piles in which no pile holds two URLs of one domain, so consecutive URLs
//! of the output share a domain only where one domain is more than the rest can
//! separate. With `k` piles over a large batch this is the classic unshuffle. O(n)
//! time (one suffix lookup per URL, no allocation) and one pass of moves.

/// The host part of a host-reversed key: everything before the first `/`.
pub fn key_host(key: &[u8]) -> &[u8] {
    let end = key.iter().position(|&b| b == b'/').unwrap_or(key.len());
    &key[..end]
}

/// The registered domain of a host-reversed key's host (`test.acme17` for
/// `test.acme17.www/a`, `uk.co.bbc` for `uk.co.bbc.www/`), as a prefix of the key:
/// the budgets' site ([`app_core::budget::site_of`]: public suffix plus one label),
/// so the unshuffle and the host budgets group hosts by one rule. No allocation.
pub fn key_domain(key: &[u8]) -> &[u8] {
    app_core::budget::site_of(key_host(key))
}

/// Reorders `items` (sorted so that equal groups are adjacent) by dealing them
/// round-robin into at most `k` piles and concatenating the piles; `group_of`
/// names an item's group ([`key_domain`] for the crawl).
pub fn unshuffle<T>(items: Vec<T>, k: usize, group_of: impl Fn(&T) -> &[u8]) -> Vec<T> {
    let n = items.len();
    let mut longest = 0;
    let mut run = 0;
    let mut prev: Option<&[u8]> = None;
    for item in &items {
        let group = group_of(item);
        run = if prev == Some(group) { run + 1 } else { 1 };
        prev = Some(group);
        longest = longest.max(run);
    }
    let piles = k.min(longest).max(1);
    if piles == 1 {
        return items;
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    for pile in 0..piles {
        for slot in slots.iter_mut().skip(pile).step_by(piles) {
            out.extend(slot.take());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_domains_by_the_public_suffix_list() {
        let cases = [
            ("test.acme17.www/a", "test.acme17"),
            ("test.acme17/", "test.acme17"),
            ("test.acme17.shop.deep/x#http:8080", "test.acme17"),
            ("uk.co.bbc.www/", "uk.co.bbc"),
            ("uk.co/", "uk.co"),
            ("com.example/", "com.example"),
            ("io.github.someone/", "io.github.someone"),
            ("127.0.0.1/x", "127.0.0.1"),
            ("[::1]/x", "[::1]"),
            ("localhost/", "localhost"),
        ];
        for (key, want) in cases {
            assert_eq!(
                std::str::from_utf8(key_domain(key.as_bytes())).unwrap(),
                want,
                "{key}"
            );
        }
    }

    /// Issue 28 Done-when 5: one URL on each of many hosts of one registered
    /// domain are spread apart while other domains have URLs to put between them.
    #[test]
    fn many_hosts_of_one_domain_are_never_adjacent() {
        let mut input: Vec<String> = (0..40)
            .map(|h| format!("test.acme.h{h:02}/"))
            .chain((0..60).map(|d| format!("test.other{d:02}.www/")))
            .collect();
        input.sort();
        let by_host = unshuffle(input.clone(), 1000, |k| key_host(k.as_bytes()));
        assert_eq!(by_host, input, "by host: one URL per host, nothing to deal");
        let out = unshuffle(input.clone(), 1000, |k| key_domain(k.as_bytes()));
        let mut sorted = out.clone();
        sorted.sort();
        assert_eq!(sorted, input, "a permutation");
        for w in out.windows(2) {
            assert_ne!(
                key_domain(w[0].as_bytes()),
                key_domain(w[1].as_bytes()),
                "{w:?}"
            );
        }
    }

    fn keys(domains: usize, per: usize) -> Vec<String> {
        let mut v: Vec<String> = (0..domains)
            .flat_map(|d| (0..per).map(move |i| format!("test.d{d:02}/p{i:04}")))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn spreads_a_domains_urls_over_the_stream() {
        let input = keys(10, 100);
        let out = unshuffle(input.clone(), 1000, |k| key_host(k.as_bytes()));
        let mut sorted = out.clone();
        sorted.sort();
        assert_eq!(sorted, input, "a permutation");
        for w in out.windows(2) {
            assert_ne!(
                key_host(w[0].as_bytes()),
                key_host(w[1].as_bytes()),
                "{w:?}"
            );
        }
        // Every domain's URLs are spread over the whole stream: one in each tenth.
        for d in 0..10 {
            let host = format!("test.d{d:02}");
            let pos: Vec<usize> = out
                .iter()
                .enumerate()
                .filter(|(_, k)| key_host(k.as_bytes()) == host.as_bytes())
                .map(|(i, _)| i)
                .collect();
            assert_eq!(pos.len(), 100);
            for w in pos.windows(2) {
                assert!(w[1] - w[0] >= 9, "{host}: {w:?}");
            }
            assert!(
                pos[0] < 10 && pos[99] >= 990,
                "{host}: {:?}",
                (pos[0], pos[99])
            );
        }
    }

    #[test]
    fn k_bounds_the_piles_and_small_cases_stay_whole() {
        let out = unshuffle(keys(2, 6), 3, |k| key_host(k.as_bytes()));
        let hosts: Vec<&str> = out.iter().map(|k| &k[..8]).collect();
        // 3 piles of 4: d00 d00 d01 d01 | ... (k too small to separate fully).
        assert_eq!(out.len(), 12);
        assert_eq!(hosts[0], "test.d00");
        assert_eq!(out[1], "test.d00/p0003");
        let one = unshuffle(keys(5, 1), 1000, |k| key_host(k.as_bytes()));
        assert_eq!(one, keys(5, 1));
        assert!(unshuffle(Vec::<String>::new(), 10, |k| key_host(k.as_bytes())).is_empty());
    }

    #[test]
    fn unavoidable_adjacency_only_where_one_host_dominates() {
        let mut input = keys(1, 90);
        input.extend(keys(10, 1).into_iter().skip(1));
        input.sort();
        let out = unshuffle(input, 1000, |k| key_host(k.as_bytes()));
        let same = out
            .windows(2)
            .filter(|w| key_host(w[0].as_bytes()) == key_host(w[1].as_bytes()))
            .count();
        assert!(same <= 90 - 9, "{same}");
    }
}
