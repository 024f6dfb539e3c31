//! MLX release numbers. `.mlxfn` files are laid out as the MLX release that
//! wrote them did (the header and some primitives' state changed over
//! time), so the MLX codec reads and writes for a given release.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// An MLX release, `major.minor.patch`, ordered by release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MlxVersion {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl MlxVersion {
    /// The oldest release whose layout this library knows (the oldest that
    /// pip installs on Linux as `mlx[cpu]` and that the fixtures cover).
    pub const OLDEST: MlxVersion = MlxVersion::new(0, 26, 5);
    /// The newest release whose layout this library knows; files are
    /// written for it unless told otherwise.
    pub const NEWEST: MlxVersion = MlxVersion::new(0, 32, 4);
    /// The release that added the metadata string to the header.
    pub const HEADER_METADATA: MlxVersion = MlxVersion::new(0, 32, 1);
    /// The first release that passes keyword inputs to an imported function
    /// in the file's (sorted) order; older ones use hash-map order, so a
    /// function with two or more keyword inputs gets them mixed up.
    pub const KWARGS_IN_ORDER: MlxVersion = MlxVersion::new(0, 29, 3);

    /// The releases from [`OLDEST`](Self::OLDEST) to [`NEWEST`](Self::NEWEST)
    /// that PyPI lists (for naming the ends of a range of readers).
    pub const RELEASES: &'static [MlxVersion] = &[
        MlxVersion::new(0, 26, 5),
        MlxVersion::new(0, 27, 1),
        MlxVersion::new(0, 28, 0),
        MlxVersion::new(0, 29, 0),
        MlxVersion::new(0, 29, 1),
        MlxVersion::new(0, 29, 2),
        MlxVersion::new(0, 29, 3),
        MlxVersion::new(0, 29, 4),
        MlxVersion::new(0, 30, 0),
        MlxVersion::new(0, 30, 1),
        MlxVersion::new(0, 30, 3),
        MlxVersion::new(0, 30, 4),
        MlxVersion::new(0, 30, 5),
        MlxVersion::new(0, 30, 6),
        MlxVersion::new(0, 31, 0),
        MlxVersion::new(0, 31, 1),
        MlxVersion::new(0, 31, 2),
        MlxVersion::new(0, 32, 0),
        MlxVersion::new(0, 32, 1),
        MlxVersion::new(0, 32, 2),
        MlxVersion::new(0, 32, 3),
        MlxVersion::new(0, 32, 4),
    ];

    /// A release from its three numbers.
    pub const fn new(major: u16, minor: u16, patch: u16) -> MlxVersion {
        MlxVersion {
            major,
            minor,
            patch,
        }
    }

    /// Reads the leading `major.minor.patch` of a version string; a suffix
    /// (`0.32.2.dev20250101+abc`) is ignored. `None` if there is none.
    pub fn parse_prefix(s: &str) -> Option<MlxVersion> {
        let mut parts = s.splitn(3, '.');
        let mut num = |last: bool| -> Option<u16> {
            let p = parts.next()?;
            let digits = if last {
                let end = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
                &p[..end]
            } else {
                p
            };
            digits.parse().ok()
        };
        Some(MlxVersion::new(num(false)?, num(false)?, num(true)?))
    }

    /// Whether this library knows this release's layout exactly.
    pub fn is_known(self) -> bool {
        (MlxVersion::OLDEST..=MlxVersion::NEWEST).contains(&self)
    }
}

impl FromStr for MlxVersion {
    type Err = Error;
    fn from_str(s: &str) -> Result<MlxVersion> {
        let v = MlxVersion::parse_prefix(s.trim()).ok_or_else(|| {
            Error::invalid(
                "MlxVersion",
                format!("expected an MLX release like 0.29.4, found {s:?}"),
            )
        })?;
        if !v.is_known() {
            return Err(Error::invalid(
                "MlxVersion",
                format!(
                    "MLX {v} is outside the releases this library can write for ({} to {})",
                    MlxVersion::OLDEST,
                    MlxVersion::NEWEST
                ),
            ));
        }
        Ok(v)
    }
}

impl fmt::Display for MlxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_releases_and_dev_strings() {
        assert_eq!(
            MlxVersion::parse_prefix("0.32.2.dev20250101+abc"),
            Some(MlxVersion::new(0, 32, 2))
        );
        assert_eq!(
            MlxVersion::parse_prefix("0.29.4"),
            Some(MlxVersion::new(0, 29, 4))
        );
        assert_eq!(MlxVersion::parse_prefix(""), None);
        assert_eq!(MlxVersion::parse_prefix("1.2"), None);
        assert!("0.25.2".parse::<MlxVersion>().is_err());
        assert!("0.31.0".parse::<MlxVersion>().is_ok());
        assert!(MlxVersion::new(0, 29, 0) < MlxVersion::new(0, 29, 10));
    }
}
