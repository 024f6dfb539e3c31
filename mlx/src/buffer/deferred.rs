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

use super::{fresh_blocks, Block, BUFFER_ALIGN};
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
    pub(super) fn bytes(&self, nbytes: usize) -> &[u8] {
        let blocks = self.copy.get_or_init(|| self.copy_out(nbytes));
        // SAFETY: the blocks hold at least nbytes initialised bytes.
        unsafe { std::slice::from_raw_parts(blocks.as_ptr() as *const u8, nbytes) }
    }

    fn copy_out(&self, nbytes: usize) -> Vec<Block> {
        let src = &self.map[self.offset..self.offset + nbytes];
        let mut blocks = fresh_blocks(nbytes.div_ceil(BUFFER_ALIGN).max(1));
        // SAFETY: the blocks are plain bytes, at least nbytes of them.
        let dst = unsafe { std::slice::from_raw_parts_mut(blocks.as_mut_ptr() as *mut u8, nbytes) };
        dst.par_chunks_mut(COPY_CHUNK)
            .zip(src.par_chunks(COPY_CHUNK))
            .for_each(|(d, s)| {
                d.copy_from_slice(s);
                if self.bools {
                    d.iter_mut().for_each(|b| *b = (*b != 0) as u8);
                }
            });
        self.release_source(nbytes);
        blocks
    }

    /// Drops the file's pages of this region from the process (they stay
    /// in the page cache): the copy is the only one the process needs.
    fn release_source(&self, nbytes: usize) {
        let page = 4096;
        let start = self.offset.next_multiple_of(page);
        let end = (self.offset + nbytes) / page * page;
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
