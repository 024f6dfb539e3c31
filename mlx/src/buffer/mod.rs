//! Shared, 64-byte-aligned storage for array data: heap memory or a region
//! of a memory-mapped file.

mod cache;
mod deferred;

pub use cache::{cache_memory, clear_cache, set_cache_limit};
pub use deferred::DeferredFile;

use crate::Element;
use std::sync::Arc;

/// Alignment of every heap buffer (and of constants in native files).
pub const BUFFER_ALIGN: usize = 64;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; BUFFER_ALIGN]);

const _: () = assert!(std::mem::size_of::<Block>() == BUFFER_ALIGN);

enum Storage {
    Heap(Vec<Block>),
    /// A region `[offset, offset + len)` of a mapped file, 64-byte aligned.
    Mapped(Arc<memmap2::Mmap>, usize),
    /// A region of a mapped file, copied into aligned memory on first read.
    Deferred(Box<deferred::Deferred>),
}

/// Raw bytes of one array (or of several views of it).
pub struct Buffer {
    storage: Storage,
    nbytes: usize,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.storage {
            Storage::Heap(_) => "heap",
            Storage::Mapped(..) => "mapped",
            Storage::Deferred(..) => "deferred copy of a mapped file",
        };
        write!(f, "Buffer({kind}, {} bytes)", self.nbytes)
    }
}

/// `blocks` zeroed blocks straight from the allocator: large ones come as
/// fresh zero pages the OS maps on first touch, with no zero-filling pass.
/// `None` when the size overflows or the allocator has no memory for it.
fn try_fresh_blocks(blocks: usize) -> Option<Vec<Block>> {
    let layout = std::alloc::Layout::array::<Block>(blocks).ok()?;
    // SAFETY: the layout has non-zero size (blocks >= 1); an all-zero Block
    // is a valid value, and the vector takes ownership of the allocation
    // made with Block's layout.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut Block;
        if ptr.is_null() {
            return None;
        }
        Some(Vec::from_raw_parts(ptr, blocks, blocks))
    }
}

/// [`try_fresh_blocks`] for the infallible constructors. A failure unwinds
/// (it does not abort, as `handle_alloc_error` would): evaluation turns it
/// into [`Error::OutOfMemory`](crate::Error::OutOfMemory).
fn fresh_blocks(blocks: usize) -> Vec<Block> {
    try_fresh_blocks(blocks)
        .unwrap_or_else(|| std::panic::panic_any(OutOfMemory(blocks.saturating_mul(BUFFER_ALIGN))))
}

/// The panic payload of a failed buffer allocation: the bytes asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutOfMemory(pub usize);

/// Checks that `nbytes` can be allocated now, without keeping them: a
/// fresh allocation of untouched pages is mapped and unmapped, no memory is
/// written. Evaluation asks before each large output, so a size the
/// machine (or an address-space limit) cannot hold is an `Err` before a
/// kernel starts, where its own temporaries would abort the process.
pub(crate) fn check_allocatable(nbytes: usize) -> crate::Result<()> {
    let blocks = nbytes.div_ceil(BUFFER_ALIGN).max(1);
    match try_fresh_blocks(blocks) {
        Some(v) => {
            drop(v);
            Ok(())
        }
        None => Err(crate::Error::OutOfMemory {
            what: "an array".into(),
            bytes: nbytes as u64,
        }),
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Storage::Heap(v) = &mut self.storage {
            cache::give(std::mem::take(v));
        }
    }
}

impl Buffer {
    fn heap(blocks: Vec<Block>, nbytes: usize) -> Buffer {
        Buffer {
            storage: Storage::Heap(blocks),
            nbytes,
        }
    }

    /// A zero-filled buffer of `nbytes` bytes.
    pub fn zeroed(nbytes: usize) -> Buffer {
        Buffer::try_zeroed(nbytes).unwrap_or_else(|_| std::panic::panic_any(OutOfMemory(nbytes)))
    }

    /// [`Buffer::zeroed`], or [`Error::OutOfMemory`](crate::Error::OutOfMemory)
    /// when the allocator has no memory for it.
    pub fn try_zeroed(nbytes: usize) -> crate::Result<Buffer> {
        let blocks = nbytes.div_ceil(BUFFER_ALIGN).max(1);
        match cache::take(blocks) {
            Some(mut v) => {
                v.fill(Block([0; BUFFER_ALIGN]));
                Ok(Buffer::heap(v, nbytes))
            }
            None => try_fresh_blocks(blocks)
                .map(|v| Buffer::heap(v, nbytes))
                .ok_or_else(|| crate::Error::OutOfMemory {
                    what: "a buffer".into(),
                    bytes: nbytes as u64,
                }),
        }
    }

    /// A buffer of `nbytes` bytes whose contents are unspecified (zeros, or
    /// what an earlier array wrote): for kernels that write every byte.
    /// Never view it as `bool` before writing it.
    pub fn for_overwrite(nbytes: usize) -> Buffer {
        let blocks = nbytes.div_ceil(BUFFER_ALIGN).max(1);
        let v = cache::take(blocks).unwrap_or_else(|| fresh_blocks(blocks));
        Buffer::heap(v, nbytes)
    }

    /// A buffer for `n` elements of `T` that the caller writes in full
    /// ([`Buffer::for_overwrite`]; zeroed for `bool`, whose bytes must be 0 or 1).
    pub fn for_elements<T: Element>(n: usize) -> Buffer {
        let nbytes = n * std::mem::size_of::<T>();
        if T::DTYPE == crate::Dtype::Bool {
            Buffer::zeroed(nbytes)
        } else {
            Buffer::for_overwrite(nbytes)
        }
    }

    /// A buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Buffer {
        let mut b = Buffer::for_overwrite(bytes.len());
        b.bytes_mut()
            .expect("fresh heap buffer")
            .copy_from_slice(bytes);
        b
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice<T: Element>(data: &[T]) -> Buffer {
        // SAFETY: elements are plain data without padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data))
        };
        Buffer::from_bytes(bytes)
    }

    /// A view of `len` bytes at `offset` of a mapped file.
    ///
    /// Returns `None` unless the range lies inside the map and starts 64-byte aligned.
    pub fn mapped(map: Arc<memmap2::Mmap>, offset: usize, len: usize) -> Option<Buffer> {
        let end = offset.checked_add(len)?;
        if end > map.len() || !(map.as_ptr() as usize + offset).is_multiple_of(BUFFER_ALIGN) {
            return None;
        }
        Some(Buffer {
            storage: Storage::Mapped(map, offset),
            nbytes: len,
        })
    }

    pub fn len(&self) -> usize {
        self.nbytes
    }

    pub fn is_empty(&self) -> bool {
        self.nbytes == 0
    }

    /// Whether the bytes come from a mapped file (read-only: never donated).
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(..) | Storage::Deferred(..))
    }

    /// `len` bytes at `offset` of a mapped file, read in place when they
    /// are 64-byte aligned, else copied on first read together with the
    /// file's other deferred regions ([`DeferredFile`]; `bools`: the bytes
    /// are `bool` values, normalised to 0/1 by the copy).
    /// `None` unless the range lies inside the map.
    pub fn mapped_or_deferred(
        file: &Arc<DeferredFile>,
        offset: usize,
        len: usize,
        bools: bool,
    ) -> Option<Buffer> {
        if offset.checked_add(len)? > file.map().len() {
            return None;
        }
        if !bools {
            if let Some(b) = Buffer::mapped(file.map().clone(), offset, len) {
                return Some(b);
            }
        }
        Some(Buffer {
            storage: Storage::Deferred(Box::new(deferred::Deferred::new(file, offset, len, bools))),
            nbytes: len,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Heap(v) => {
                // SAFETY: the blocks hold at least nbytes initialised bytes.
                unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, self.nbytes) }
            }
            Storage::Mapped(m, off) => &m[*off..*off + self.nbytes],
            Storage::Deferred(d) => d.bytes(self.nbytes),
        }
    }

    /// Mutable bytes; `None` for a mapped (read-only) buffer.
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.storage {
            Storage::Heap(v) => {
                // SAFETY: as in `bytes`, and we hold the only reference.
                Some(unsafe {
                    std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, self.nbytes)
                })
            }
            Storage::Mapped(..) | Storage::Deferred(..) => None,
        }
    }

    /// The buffer as a slice of `T` (`nbytes / size_of::<T>()` elements).
    pub fn as_slice<T: Element>(&self) -> &[T] {
        let bytes = self.bytes();
        debug_assert!(aligned_for::<T>(bytes));
        // SAFETY: storage is 64-byte aligned.
        unsafe { cast_unchecked(bytes) }
    }

    /// Mutable typed view; `None` for a mapped buffer.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        let bytes = self.bytes_mut()?;
        debug_assert!(aligned_for::<T>(bytes));
        // SAFETY: storage is 64-byte aligned.
        Some(unsafe { cast_unchecked_mut(bytes) })
    }
}

fn aligned_for<T>(bytes: &[u8]) -> bool {
    (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>())
}

/// Makes raw `bool` bytes valid: any non-zero byte becomes 1.
pub(crate) fn normalize_bools(bytes: &mut [u8]) {
    bytes.iter_mut().for_each(|b| *b = (*b != 0) as u8);
}

/// Bytes as elements of `T` (`len / size_of::<T>()` of them).
///
/// # Safety
/// `bytes` must be aligned for `T`.
unsafe fn cast_unchecked<T: Element>(bytes: &[u8]) -> &[T] {
    // SAFETY: aligned (the caller's promise), T is plain data; bool buffers
    // are only ever filled with 0/1 (kernels and loaders normalise them).
    unsafe {
        std::slice::from_raw_parts(
            bytes.as_ptr() as *const T,
            bytes.len() / std::mem::size_of::<T>(),
        )
    }
}

/// Mutable [`cast_unchecked`]; writers store valid values of `T`.
///
/// # Safety
/// `bytes` must be aligned for `T`.
unsafe fn cast_unchecked_mut<T: Element>(bytes: &mut [u8]) -> &mut [T] {
    let n = bytes.len() / std::mem::size_of::<T>();
    // SAFETY: as in `cast_unchecked`.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, n) }
}

/// Bytes of a buffer (or a slice of one) as elements of `T`
/// (`len / size_of::<T>()` of them). Panics if they are not aligned for `T`.
pub fn cast_bytes<T: Element>(bytes: &[u8]) -> &[T] {
    assert!(aligned_for::<T>(bytes), "misaligned bytes");
    // SAFETY: aligned (checked).
    unsafe { cast_unchecked(bytes) }
}

/// Mutable [`cast_bytes`]. Panics if the bytes are not aligned for `T`.
pub fn cast_bytes_mut<T: Element>(bytes: &mut [u8]) -> &mut [T] {
    assert!(aligned_for::<T>(bytes), "misaligned bytes");
    // SAFETY: aligned (checked).
    unsafe { cast_unchecked_mut(bytes) }
}
