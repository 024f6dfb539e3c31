//! Regions of a mapped file that are copied into aligned memory only when
//! first read: what an MLX `.mlxfn` constant becomes at import.
//!
//! MLX lays constants out back to back after variable-length records, so
//! they rarely start 64-byte aligned and cannot be viewed in place. Copying
//! them all at import made importing a 514 MB model take seconds and hold
//! the file twice (the page cache and the copy). Deferred, an import reads
//! only the records. The first read of any of a file's misaligned
//! constants copies all of them at once (a call reads every constant of its
//! graph anyway): one pass with every core into one region backed by huge
//! pages, which costs a third of copying each constant as the graph reaches
//! it, one core and 4 KiB page faults at a time. The copy reads the open
//! file (`pread`), so the file's pages are never mapped into the process:
//! it holds each constant once, and skips a page fault per 64 KiB of the
//! map. Without the file (or if a read fails) it copies from the map and
//! lets go of the map's pages behind it.

use super::{Buffer, BUFFER_ALIGN};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Bytes copied per task of the shared copy.
const COPY_CHUNK: usize = 1 << 20;

/// Huge-page size the copy's region is aligned to.
const HUGE_PAGE: usize = 2 << 20;

const PAGE: usize = 4096;

/// The deferred regions of one mapped file, copied together.
pub struct DeferredFile {
    map: Arc<memmap2::Mmap>,
    /// The open file `map` maps, read by the copy when given.
    file: Option<std::fs::File>,
    regions: Mutex<Vec<Region>>,
    /// Set once every region is registered (the import has read the whole
    /// file): from then on the first read copies them all.
    sealed: AtomicBool,
    copy: OnceLock<Arena>,
}

#[derive(Clone, Copy)]
struct Region {
    offset: usize,
    len: usize,
    /// Bytes are `bool` values: any non-zero byte becomes 1.
    bools: bool,
}

/// The copies of the first `at.len()` regions, each at a 64-byte aligned
/// offset of one anonymous mapping.
struct Arena {
    mem: memmap2::MmapMut,
    at: Vec<usize>,
}

impl DeferredFile {
    /// `file`: the open file that `map` maps, if the caller has it.
    pub fn new(map: Arc<memmap2::Mmap>, file: Option<std::fs::File>) -> Arc<DeferredFile> {
        Arc::new(DeferredFile {
            map,
            file,
            regions: Mutex::new(Vec::new()),
            sealed: AtomicBool::new(false),
            copy: OnceLock::new(),
        })
    }

    /// The mapped file.
    pub fn map(&self) -> &Arc<memmap2::Mmap> {
        &self.map
    }

    /// Marks the file's regions complete: the next first read copies them
    /// all. (A region read before this is copied on its own.)
    ///
    /// It also lets go of the map's pages the import's reads brought in:
    /// each record read maps the 64 KiB around it (the kernel's
    /// fault-around), ~28 MB of a llama's file that would stay in the
    /// process beside the copies. Constants read in place fault theirs
    /// back in when used.
    pub fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
        self.release_source(0, self.map.len());
    }

    fn register(&self, region: Region) -> usize {
        let mut regions = self.regions.lock().unwrap_or_else(|p| p.into_inner());
        regions.push(region);
        regions.len() - 1
    }

    /// Region `index`'s copy in the shared arena, copying every region on
    /// the first call after [`seal`](Self::seal); `None` before it, or for
    /// a region registered after the arena was made.
    fn shared(&self, index: usize, nbytes: usize) -> Option<&[u8]> {
        let arena = match self.copy.get() {
            Some(a) => a,
            None if self.sealed.load(Ordering::Acquire) => {
                // The copy runs on its own scoped threads, never on rayon's
                // pool: a pool thread waiting here cannot be the one the
                // copy waits for, so callers may block on the cell.
                self.copy.get_or_init(|| self.copy_all())
            }
            None => return None,
        };
        let at = *arena.at.get(index)?;
        Some(&arena.mem[at..at + nbytes])
    }

    fn copy_all(&self) -> Arena {
        let regions = self
            .regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let slot = |r: &Region| r.len.next_multiple_of(BUFFER_ALIGN).max(BUFFER_ALIGN);
        let total = regions
            .iter()
            .try_fold(0usize, |t, r| t.checked_add(slot(r)))
            .unwrap_or_else(|| std::panic::panic_any(super::OutOfMemory(usize::MAX)));
        let (mut mem, start) = huge_page_region(total);
        // Each region's slot, cut in chunks: (region, chunk start, chunk),
        // handed out in order to every thread.
        let mut at = Vec::with_capacity(regions.len());
        let mut tasks = Vec::new();
        let mut rest = &mut mem[start..start + total];
        for (i, r) in regions.iter().enumerate() {
            at.push(start + total - rest.len());
            let (here, next) = rest.split_at_mut(slot(r));
            let chunks = here[..r.len].chunks_mut(COPY_CHUNK);
            tasks.extend(chunks.enumerate().map(|(c, d)| (i, c * COPY_CHUNK, d)));
            rest = next;
        }
        let threads = rayon::current_num_threads().clamp(1, tasks.len().max(1));
        let tasks = Mutex::new(tasks.into_iter());
        let work = || loop {
            let next = tasks.lock().unwrap_or_else(|p| p.into_inner()).next();
            let Some((i, c, d)) = next else { break };
            self.copy_into(regions[i], c, d);
        };
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(work);
            }
            work();
        });
        Arena { mem, at }
    }

    /// Copies `dst.len()` bytes of region `r` from `c` on into `dst`, then
    /// lets go of their file pages.
    fn copy_into(&self, r: Region, c: usize, dst: &mut [u8]) {
        let at = r.offset + c;
        if !self.read_file(at, dst) {
            dst.copy_from_slice(&self.map[at..at + dst.len()]);
            self.release_source(at, dst.len());
        }
        if r.bools {
            super::normalize_bools(dst);
        }
    }

    /// Fills `dst` from the file at `at`; false (nothing promised of
    /// `dst`) without a file or when the read fails.
    fn read_file(&self, at: usize, dst: &mut [u8]) -> bool {
        #[cfg(unix)]
        if let Some(file) = &self.file {
            use std::os::unix::fs::FileExt;
            return file.read_exact_at(dst, at as u64).is_ok();
        }
        #[cfg(not(unix))]
        let _ = (&self.file, at, dst);
        false
    }

    /// Region `index`'s bytes copied on their own, for a read before the
    /// file is sealed.
    fn copy_one(&self, index: usize) -> Buffer {
        let r = self.regions.lock().unwrap_or_else(|p| p.into_inner())[index];
        let mut copy = Buffer::for_overwrite(r.len);
        self.copy_into(r, 0, copy.bytes_mut().expect("a heap buffer"));
        copy
    }

    /// Drops the file's pages of `[at, at + len)` from the process (they
    /// stay in the page cache): the copy is the only one the process needs.
    fn release_source(&self, at: usize, len: usize) {
        let start = at.next_multiple_of(PAGE);
        let end = (at + len) / PAGE * PAGE;
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

/// A zeroed anonymous mapping with room for `len` bytes from a 2 MiB
/// aligned start (returned), marked for transparent huge pages: a fault
/// then maps 2 MiB at once instead of 4 KiB. A failed mapping unwinds as the
/// other buffer constructors do.
fn huge_page_region(len: usize) -> (memmap2::MmapMut, usize) {
    let room = len.saturating_add(HUGE_PAGE);
    let mem = memmap2::MmapMut::map_anon(room)
        .unwrap_or_else(|_| std::panic::panic_any(super::OutOfMemory(room)));
    let start = (mem.as_ptr() as usize).next_multiple_of(HUGE_PAGE) - mem.as_ptr() as usize;
    #[cfg(target_os = "linux")]
    {
        // Only advice: without huge pages the copy is slower, not wrong.
        let _ = mem.advise_range(memmap2::Advice::HugePage, start, len.max(1));
    }
    (mem, start)
}

/// One deferred region: a constant of an imported file.
pub(super) struct Deferred {
    file: Arc<DeferredFile>,
    index: usize,
    /// The region's own copy, when it was read before the file was sealed.
    own: OnceLock<Buffer>,
}

impl Deferred {
    pub(super) fn new(file: &Arc<DeferredFile>, offset: usize, len: usize, bools: bool) -> Self {
        let index = file.register(Region { offset, len, bools });
        Deferred {
            file: file.clone(),
            index,
            own: OnceLock::new(),
        }
    }

    /// The copied bytes (`nbytes` of them), copying on the first read.
    pub(super) fn bytes(&self, nbytes: usize) -> &[u8] {
        if let Some(b) = self.own.get() {
            return b.bytes();
        }
        if let Some(b) = self.file.shared(self.index, nbytes) {
            return b;
        }
        self.own
            .get_or_init(|| self.file.copy_one(self.index))
            .bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the copy reaches the file's bytes in a test.
    #[derive(Clone, Copy, Debug)]
    enum Reader {
        /// No file: copied from the map.
        MapOnly,
        /// The open file, read with `pread`.
        File,
        /// A handle that cannot be read (opened write-only): every read
        /// fails and the copy falls back to the map.
        Unreadable,
    }

    /// A mapped temporary file of `n` bytes, byte `i` = `i * 7 % 251`, and
    /// the handle `reader` asks for.
    fn mapped(n: usize, reader: Reader) -> (Arc<memmap2::Mmap>, Option<std::fs::File>) {
        let path =
            std::env::temp_dir().join(format!("mlx-deferred-{}-{reader:?}", std::process::id()));
        let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is ours and not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let handle = match reader {
            Reader::MapOnly => None,
            Reader::File => Some(file),
            Reader::Unreadable => {
                Some(std::fs::OpenOptions::new().write(true).open(&path).unwrap())
            }
        };
        std::fs::remove_file(&path).ok();
        (Arc::new(map), handle)
    }

    fn expected(offset: usize, len: usize, bools: bool) -> Vec<u8> {
        (offset..offset + len)
            .map(|i| (i * 7 % 251) as u8)
            .map(|b| if bools { (b != 0) as u8 } else { b })
            .collect()
    }

    #[test]
    fn the_first_read_after_sealing_copies_every_region_once() {
        for reader in [Reader::MapOnly, Reader::File, Reader::Unreadable] {
            copies_every_region_once(reader);
        }
    }

    fn copies_every_region_once(reader: Reader) {
        let (map, handle) = mapped(3 * COPY_CHUNK + 999, reader);
        let file = DeferredFile::new(map, handle);
        let specs = [
            (3, COPY_CHUNK + 5, false), // two copy tasks
            (COPY_CHUNK + 9, 17, true),
            (2 * COPY_CHUNK + 1, COPY_CHUNK, false),
            (0, 0, false),
        ];
        let parts: Vec<Deferred> = specs
            .iter()
            .map(|&(o, n, b)| Deferred::new(&file, o, n, b))
            .collect();
        // Read before sealing: copied on its own.
        assert_eq!(parts[1].bytes(17), expected(COPY_CHUNK + 9, 17, true));
        assert!(file.copy.get().is_none());
        file.seal();
        assert_eq!(
            parts[2].bytes(COPY_CHUNK),
            expected(2 * COPY_CHUNK + 1, COPY_CHUNK, false)
        );
        let arena = file
            .copy
            .get()
            .expect("the first read after sealing copies all");
        let range = arena.mem.as_ptr_range();
        for (part, &(o, n, b)) in parts.iter().zip(&specs) {
            let got = part.bytes(n);
            assert_eq!(got, expected(o, n, b));
            assert_eq!(got.as_ptr() as usize % BUFFER_ALIGN, 0);
            if n > 0 && !b {
                assert!(
                    range.contains(&got.as_ptr()),
                    "region at {o} not in the arena"
                );
            }
        }
        // Registered after the arena was made: copied on its own.
        let late = Deferred::new(&file, 11, 100, false);
        let got = late.bytes(100);
        assert_eq!(got, expected(11, 100, false));
        assert!(!range.contains(&got.as_ptr()));
    }
}
