//! MLX's positional little-endian wire encoding (`.mlxfn` files), as a
//! bounds-checked reader and a plain writer.

use super::MlxVersion;
use crate::{Error, Result};

/// Appends MLX wire values to a byte vector, laid out for one MLX release.
#[derive(Debug)]
pub struct MlxWriter {
    /// Everything written so far.
    pub bytes: Vec<u8>,
    /// The release the bytes are for: state fields it does not have are left out.
    pub target: MlxVersion,
    /// What the target release cannot express (a state field it lacks set to
    /// a value other than the one the release implies); the encoder refuses
    /// to write the file if this is not empty.
    pub problems: Vec<String>,
}

impl Default for MlxWriter {
    fn default() -> MlxWriter {
        MlxWriter::new()
    }
}

impl MlxWriter {
    /// An empty writer for the newest known release.
    pub fn new() -> MlxWriter {
        MlxWriter::for_release(MlxVersion::NEWEST)
    }
    /// An empty writer for `target`.
    pub fn for_release(target: MlxVersion) -> MlxWriter {
        MlxWriter {
            bytes: Vec::new(),
            target,
            problems: Vec::new(),
        }
    }
    /// Records that state field `field` of `primitive` has no place in the
    /// target's layout (it was added in `since`) but holds a value that matters.
    pub fn missing_field(&mut self, primitive: &str, field: &str, since: MlxVersion) {
        self.problems.push(format!(
            "{primitive}'s `{field}` exists only from MLX {since} on, and this graph needs it (writing for MLX {})",
            self.target
        ));
    }
    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    /// One byte, 0 or 1.
    pub fn bool(&mut self, v: bool) {
        self.bytes.push(v as u8);
    }
    /// 4 bytes; also every C++ enum.
    pub fn i32(&mut self, v: i32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// 8 bytes; also `size_t`.
    pub fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// 8 bytes.
    pub fn i64(&mut self, v: i64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// 4 bytes, IEEE binary32.
    pub fn f32(&mut self, v: f32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// 8 bytes, IEEE binary64.
    pub fn f64(&mut self, v: f64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// A `u64` length, then the raw bytes.
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes.extend_from_slice(s.as_bytes());
    }
    /// A `u64` element count (for a vector).
    pub fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    /// Bytes as they are (no length).
    pub fn raw(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
    }
}

/// Reads MLX wire values, checking every length against what is left.
pub struct MlxReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where the bytes come from, for messages (a file path).
    pub source: String,
    /// The release whose layout the bytes follow (from the file's header).
    pub version: MlxVersion,
}

impl<'a> MlxReader<'a> {
    /// A reader at the start of `bytes`; `source` names them in errors.
    pub fn new(bytes: &'a [u8], source: impl Into<String>) -> MlxReader<'a> {
        MlxReader {
            bytes,
            pos: 0,
            source: source.into(),
            version: MlxVersion::NEWEST,
        }
    }

    /// Current offset from the start.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// A format error at the current offset.
    pub fn error(&self, msg: impl std::fmt::Display) -> Error {
        Error::Format {
            path: self.source.clone(),
            msg: format!("at byte {}: {msg}", self.pos),
        }
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.remaining()
            )));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        Ok(s.try_into().expect("length checked"))
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>("u8")?[0])
    }
    /// One byte that must be 0 or 1.
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => {
                self.pos -= 1;
                Err(self.error(format!("expected a bool (0 or 1), found {b}")))
            }
        }
    }
    /// 4 bytes, little-endian.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array("i32")?))
    }
    /// 8 bytes, little-endian.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array("u64")?))
    }
    /// 8 bytes, little-endian.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array("i64")?))
    }
    /// IEEE binary32.
    pub fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array("f32")?))
    }
    /// IEEE binary64.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array("f64")?))
    }

    /// A vector count whose elements take at least `min_elem_bytes` each;
    /// rejected before any allocation if the rest of the input cannot hold it.
    pub fn len(&mut self, min_elem_bytes: usize, what: &str) -> Result<usize> {
        let n = self.u64()?;
        let fits = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(min_elem_bytes.max(1)))
            .is_some_and(|b| b <= self.remaining());
        if !fits {
            self.pos -= 8;
            return Err(self.error(format!(
                "{what}: count {n} cannot fit in the {} bytes left",
                self.remaining() - 8
            )));
        }
        Ok(n as usize)
    }

    /// A `u64` byte length, then that many bytes of UTF-8.
    pub fn str(&mut self) -> Result<String> {
        let n = self.len(1, "string")?;
        let b = self.take(n, "string")?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => {
                self.pos -= n;
                Err(self.error(format!("string of {n} bytes is not valid UTF-8: {e}")))
            }
        }
    }
}
