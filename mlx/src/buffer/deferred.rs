//! A region of a mapped file that is copied into aligned memory only when
//! it is first read: what an MLX `.mlxfn` constant becomes at import.
//!
//! MLX lays constants out back to back after variable-length records, so
//! they rarely start 64-byte aligned and cannot be viewed in place. Copying
//! them all at import made importing a 514 MB model take seconds and hold
//! the file twice (the page cache and the copy). Deferred, an import reads
//! only the records; the first call copies each constant it touches, in
//! parallel, and tells the kernel it no longer needs the file's pages for
//! it, so the process holds each constant about once.

use super::{Block, BUFFER_ALIGN};
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

/// Bytes copied per parallel task.
const COPY_CHUNK: usize = 4 << 20;

pub(super) struct Deferred {
    map: Arc<memmap2::Mmap>,
    offset: usize,
    /// Bytes are `bool` values: any non-zero byte becomes 1.
    bools: bool,
    copy: OnceLock<Vec<Block>>,
}

impl Deferred {
    pub(super) fn new(map: Arc<memmap2::Mmap>, offset: usize, bools: bool) -> Deferred {
        Deferred {
            map,
            offset,
            bools,
            copy: OnceLock::new(),
        }
    }

    /// The copied bytes (`nbytes` of them), copying on the first call.
    ///
    /// The copy is made before the cell is entered, not inside
    /// `get_or_init`: the copy runs parallel tasks, and a pool thread
    /// waiting for them may take up another evaluation that reads this same
    /// constant, which would then wait for a cell its own thread holds.
    /// Threads that race here each copy, and all but the first copy are
    /// dropped.
    pub(super) fn bytes(&self, nbytes: usize) -> &[u8] {
        let blocks = match self.copy.get() {
            Some(b) => b,
            None => {
                let copy = self.copy_out(nbytes);
                self.copy.get_or_init(|| copy)
            }
        };
        // SAFETY: the blocks hold at least nbytes initialised bytes.
        unsafe { std::slice::from_raw_parts(blocks.as_ptr() as *const u8, nbytes) }
    }

    fn copy_out(&self, nbytes: usize) -> Vec<Block> {
        let blocks = nbytes.div_ceil(BUFFER_ALIGN).max(1);
        let mut copy = uninit_blocks(blocks);
        let total = blocks * BUFFER_ALIGN;
        // SAFETY: `copy` owns room for `total` bytes; they are written in
        // full below (the file's bytes, then zeros for the padding) before
        // the length is set and anything reads them.
        let dst = unsafe { std::slice::from_raw_parts_mut(copy.as_mut_ptr() as *mut u8, total) };
        let (data, padding) = dst.split_at_mut(nbytes);
        padding.fill(0);
        // Each task copies its chunk (so the new pages are first touched on
        // both cores) and then lets go of that chunk's file pages, so the
        // process never holds a constant twice over.
        data.par_chunks_mut(COPY_CHUNK)
            .enumerate()
            .for_each(|(k, d)| {
                let at = self.offset + k * COPY_CHUNK;
                d.copy_from_slice(&self.map[at..at + d.len()]);
                if self.bools {
                    d.iter_mut().for_each(|b| *b = (*b != 0) as u8);
                }
                self.release_source(at, d.len());
            });
        // SAFETY: every byte of the `blocks` blocks was written above.
        unsafe { copy.set_len(blocks) };
        copy
    }

    /// Drops the file's pages of `[at, at + len)` from the process (they
    /// stay in the page cache): the copy is the only one the process needs.
    fn release_source(&self, at: usize, len: usize) {
        let page = 4096;
        let start = at.next_multiple_of(page);
        let end = (at + len) / page * page;
        if end > start {
            // SAFETY: MADV_DONTNEED on a read-only private file mapping only
            // drops pages; a later read of them faults the file's bytes in
            // again, unchanged, so no reference into the map is invalidated.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}

/// Room for `blocks` blocks, uninitialised (length 0): pages are mapped
/// when first written, by whichever thread writes them. A failed
/// allocation unwinds as the other buffer constructors do.
fn uninit_blocks(blocks: usize) -> Vec<Block> {
    let mut v = Vec::new();
    if v.try_reserve_exact(blocks).is_err() {
        std::panic::panic_any(super::OutOfMemory(blocks.saturating_mul(BUFFER_ALIGN)));
    }
    v
}
