//! Shared, 64-byte-aligned storage for array data: heap memory or a region
//! of a memory-mapped file.

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
        };
        write!(f, "Buffer({kind}, {} bytes)", self.nbytes)
    }
}

impl Buffer {
    /// A zero-filled buffer of `nbytes` bytes (zero pages are mapped lazily by the OS).
    pub fn zeroed(nbytes: usize) -> Buffer {
        let blocks = nbytes.div_ceil(BUFFER_ALIGN).max(1);
        Buffer {
            storage: Storage::Heap(vec![Block([0; BUFFER_ALIGN]); blocks]),
            nbytes,
        }
    }

    /// A buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Buffer {
        let mut b = Buffer::zeroed(bytes.len());
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
        if end > map.len() || (map.as_ptr() as usize + offset) % BUFFER_ALIGN != 0 {
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

    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(..))
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Heap(v) => {
                // SAFETY: the blocks hold at least nbytes initialised bytes.
                unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, self.nbytes) }
            }
            Storage::Mapped(m, off) => &m[*off..*off + self.nbytes],
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
            Storage::Mapped(..) => None,
        }
    }

    /// The buffer as a slice of `T` (`nbytes / size_of::<T>()` elements).
    pub fn as_slice<T: Element>(&self) -> &[T] {
        let bytes = self.bytes();
        debug_assert_eq!(bytes.as_ptr() as usize % std::mem::align_of::<T>(), 0);
        // SAFETY: storage is 64-byte aligned, T is plain data; bool buffers
        // are only ever filled with 0/1 (kernels and loaders normalise them).
        unsafe {
            std::slice::from_raw_parts(
                bytes.as_ptr() as *const T,
                bytes.len() / std::mem::size_of::<T>(),
            )
        }
    }

    /// Mutable typed view; `None` for a mapped buffer.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        let bytes = self.bytes_mut()?;
        let n = bytes.len() / std::mem::size_of::<T>();
        // SAFETY: as in `as_slice`; writers store valid values of T.
        Some(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, n) })
    }
}
