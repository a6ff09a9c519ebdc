//! What the crawl keeps with each URL in the seen set: its link depth from the
//! seeds and the redirects followed to reach it, as the seen set's 8-byte payload
//! (two little-endian `u32`s). The seen set stores bytes; this is the one place that
//! knows their layout. It must never grow a field without a format change: the
//! payloads of a crawl's seen files are read back after a restart.

/// A URL's depth and redirect hops (the seen-set payload).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// Link depth from the seeds (0 for a seed).
    pub depth: u32,
    /// Redirects followed to reach it.
    pub hops: u32,
}

impl Reach {
    /// The payload bytes.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut payload = [0u8; 8];
        payload[..4].copy_from_slice(&self.depth.to_le_bytes());
        payload[4..].copy_from_slice(&self.hops.to_le_bytes());
        payload
    }

    /// Reads a payload; a missing word reads as 0 (a payload written shorter).
    pub fn from_bytes(payload: &[u8]) -> Reach {
        let word = |at: usize| {
            payload
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_le_bytes)
        };
        Reach {
            depth: word(0),
            hops: word(4),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_short_payloads_as_zero() {
        let reach = Reach {
            depth: 7,
            hops: u32::MAX,
        };
        assert_eq!(Reach::from_bytes(&reach.to_bytes()), reach);
        assert_eq!(reach.to_bytes(), [7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            Reach::from_bytes(&[3, 0, 0, 0]),
            Reach { depth: 3, hops: 0 }
        );
        assert_eq!(Reach::from_bytes(&[]), Reach::default());
    }
}
