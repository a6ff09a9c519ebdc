//! [`NewBatch`]: the keys one merge found new, sorted, with their payloads.

/// The keys that one merge found new (not on disk before it), in sorted order, each
/// with the payload of its first insertion.
///
/// Stored compactly: all keys and payloads back to back in one byte buffer, plus one
/// `u32` offset per key and per payload (8 bytes of overhead per key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewBatch {
    generation: u64,
    bytes: Vec<u8>,
    /// `2 * len + 1` offsets: key `i` is `bytes[ends[2i]..ends[2i+1]]`, its payload
    /// `bytes[ends[2i+1]..ends[2i+2]]`.
    ends: Vec<u32>,
}

impl NewBatch {
    /// An empty batch for `generation`, with room for about `keys` keys of `bytes`.
    pub(crate) fn with_capacity(generation: u64, keys: usize, bytes: usize) -> NewBatch {
        let mut ends = Vec::with_capacity(2 * keys + 1);
        ends.push(0);
        NewBatch {
            generation,
            bytes: Vec::with_capacity(bytes),
            ends,
        }
    }

    /// Appends a key (greater than the last one) and its payload.
    pub(crate) fn push(&mut self, key: &[u8], payload: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len() as u32);
        self.bytes.extend_from_slice(payload);
        self.ends.push(self.bytes.len() as u32);
    }

    /// Releases spare capacity.
    pub(crate) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }

    /// The merge that produced the batch: the set file of this generation is the
    /// first that holds these keys. Pass it to
    /// [`SeenSet::release`](super::SeenSet::release) once the batch is published.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of new keys.
    pub fn len(&self) -> usize {
        self.ends.len().saturating_sub(1) / 2
    }

    /// True if the merge found nothing new.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th key (panics if `i >= len()`).
    pub fn key(&self, i: usize) -> &[u8] {
        &self.bytes[self.ends[2 * i] as usize..self.ends[2 * i + 1] as usize]
    }

    /// The `i`-th key's payload (panics if `i >= len()`).
    pub fn payload(&self, i: usize) -> &[u8] {
        &self.bytes[self.ends[2 * i + 1] as usize..self.ends[2 * i + 2] as usize]
    }

    /// Keys and payloads in sorted order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.len()).map(|i| (self.key(i), self.payload(i)))
    }

    /// Heap bytes held by the batch.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + 4 * self.ends.capacity()
    }
}
