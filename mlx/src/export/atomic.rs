//! Writing a file so that readers see either the old file or the complete
//! new one: write a temporary file in the same directory, fsync, rename.

use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes `parts` (concatenated) to `path` atomically. On any failure the
/// temporary file is removed and an existing file at `path` is untouched.
///
/// The temporary is `.NAME.tmp-PID-N` beside `path` (PID the writer's
/// process id, N a per-process counter). A writer killed outright
/// (`SIGKILL`, power loss) leaves `path` untouched — the old file or, after
/// the rename, the whole new one — but cannot remove its temporary: that
/// file, at most one per killed write, is all it leaves, and anything may
/// delete it once that process is gone (examples/soak.rs checks this).
pub fn write_atomic(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::Export(format!("{} is not a file path", path.display())))?;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{n}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        // Small parts (headers, padding, tiny constants) are gathered; large
        // ones go straight from the arrays' buffers to the file.
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        for p in parts {
            w.write_all(p)?;
        }
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // Make the rename itself durable; not all platforms can open a directory.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}
