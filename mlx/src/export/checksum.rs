//! Constant checksums of the native format.
//!
//! Version 1 files hash each constant's bytes with xxh3-64 in one pass.
//! Version 2 files record a block size: a constant longer than one block is
//! hashed as the xxh3-64 of its blocks' xxh3-64 digests (little-endian, in
//! order), so that the blocks can be hashed in parallel on import and export
//! (one sequential pass over 512 MiB was most of an import's first call).

use rayon::prelude::*;

/// Block size written by this library: large enough that the digests are a
/// small part of the header (256 B per GiB), small enough to spread over cores.
pub const BLOCK: u64 = 4 << 20;

/// Smallest block size a file may record (smaller ones are refused as forged).
pub const MIN_BLOCK: u64 = 4096;

/// The checksum of `bytes` with blocks of `block` bytes (0: one flat pass).
pub fn checksum(bytes: &[u8], block: u64) -> u64 {
    let block = usize::try_from(block).unwrap_or(usize::MAX);
    if block == 0 || bytes.len() <= block {
        return xxhash_rust::xxh3::xxh3_64(bytes);
    }
    let digests: Vec<u8> = bytes
        .par_chunks(block)
        .map(|b| xxhash_rust::xxh3::xxh3_64(b).to_le_bytes())
        .collect::<Vec<_>>()
        .concat();
    xxhash_rust::xxh3::xxh3_64(&digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_inputs_and_flat_mode_hash_the_bytes_directly() {
        let v: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let flat = xxhash_rust::xxh3::xxh3_64(&v);
        assert_eq!(checksum(&v, 0), flat);
        assert_eq!(checksum(&v, 10_000), flat);
        assert_ne!(checksum(&v, 4096), flat);
    }
}
