//! A hash map keyed by u64 with a cheap multiplicative hash: the engine's keys are already
//! well-spread numbers (packed (rank, op) pairs, hashes of labels), so SipHash's cost buys nothing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap<u64, V>` hashed by one multiply-xorshift round. O(1) expected per operation.
pub type U64Map<V> = HashMap<u64, V, BuildHasherDefault<U64Hasher>>;

#[derive(Default)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0xbf58476d1ce4e5b9);
    }
}
