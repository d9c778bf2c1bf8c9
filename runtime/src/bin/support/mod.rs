//! What the measuring programs (`slow_consumer`, `pending_timers`) share: their flags and the
//! peak resident set they report.

/// The value after `flag`, if given.
pub fn value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The number after `flag`, or `default`.
pub fn num(args: &[String], flag: &str, default: u64) -> Result<u64, String> {
    value(args, flag).map_or(Ok(default), |v| {
        v.parse().map_err(|e| format!("{flag} {v}: {e}"))
    })
}

/// This process's peak resident set, in KiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_kb() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmHWM in /proc/self/status".to_owned())
}
