//! This process's resident memory, read from Linux's /proc/self/status
//! (0 where it is missing). Shared by the benchmarks and, through
//! `#[path]`, the soak and training examples.

/// The `field` of /proc/self/status (`"VmRSS:"`, `"VmHWM:"`) in bytes.
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Current resident set (`VmRSS`) in bytes.
pub fn rss() -> u64 {
    status_bytes("VmRSS:")
}

/// Peak resident set (`VmHWM`) in bytes.
pub fn peak_rss() -> u64 {
    status_bytes("VmHWM:")
}
