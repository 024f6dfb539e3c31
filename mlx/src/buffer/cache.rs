//! A cache of freed large heap blocks, so the next array of about the same
//! size reuses memory that is already mapped instead of faulting in fresh
//! pages from the OS (which costs more than the kernel writing them).
//! Like MLX's allocator cache: bounded, and emptied on request.

use super::Block;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Blocks smaller than this go straight back to the system allocator.
const MIN_CACHED_BYTES: usize = 1 << 16;

/// Default bound on cached bytes.
const DEFAULT_LIMIT: usize = 1 << 30;

struct Cache {
    /// Free block vectors by block count.
    free: BTreeMap<usize, Vec<Vec<Block>>>,
    bytes: usize,
    limit: usize,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache {
    free: BTreeMap::new(),
    bytes: 0,
    limit: DEFAULT_LIMIT,
});

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(|p| p.into_inner())
}

fn bytes_of(blocks: usize) -> usize {
    blocks * std::mem::size_of::<Block>()
}

/// A cached vector of at least `blocks` blocks (at most 1/8 more), holding
/// bytes an earlier array wrote; `None` when nothing fits.
pub(super) fn take(blocks: usize) -> Option<Vec<Block>> {
    if bytes_of(blocks) < MIN_CACHED_BYTES {
        return None;
    }
    let mut c = cache();
    let (&size, _) = c.free.range(blocks..=blocks + blocks / 8).next()?;
    let list = c.free.get_mut(&size)?;
    let v = list.pop()?;
    if list.is_empty() {
        c.free.remove(&size);
    }
    c.bytes -= bytes_of(v.len());
    Some(v)
}

/// Keeps `v` for reuse if it is large and the cache has room; else frees it.
pub(super) fn give(v: Vec<Block>) {
    let n = bytes_of(v.len());
    if n < MIN_CACHED_BYTES {
        return;
    }
    let mut c = cache();
    if c.bytes + n <= c.limit {
        c.bytes += n;
        c.free.entry(v.len()).or_default().push(v);
    }
}

/// Frees every cached block (MLX: `mx.clear_cache`).
pub fn clear_cache() {
    let free = {
        let mut c = cache();
        c.bytes = 0;
        std::mem::take(&mut c.free)
    };
    drop(free);
}

/// Bounds the bytes kept for reuse, returning the previous bound; 0 turns
/// caching off (MLX: `mx.set_cache_limit`).
pub fn set_cache_limit(bytes: usize) -> usize {
    let previous = std::mem::replace(&mut cache().limit, bytes);
    if cache_memory() > bytes {
        clear_cache();
    }
    previous
}

/// Bytes currently held for reuse (MLX: `mx.get_cache_memory`).
pub fn cache_memory() -> usize {
    cache().bytes
}
