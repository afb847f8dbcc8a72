//! Load from outside the process for the benchmarks: `wrk` (installed by
//! `scripts/bench.sh`) posting a JSON body, the resident memory of a
//! process, and a trace of the statements a benchmark runs.

use std::process::Command;

/// With `BENCH_TRACE_SQL=1` set, prints every statement sqlx runs (with
/// its time) to stderr: how a benchmark counts the statements on a path.
pub fn trace_sql_if_asked() {
    if std::env::var_os("BENCH_TRACE_SQL").is_some() {
        tracing_subscriber::fmt().with_env_filter("sqlx::query=debug").with_writer(std::io::stderr).init();
    }
}

/// What one `wrk` run measured.
pub struct Load {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Non-2xx/3xx answers plus socket errors (connect, read, write,
    /// timeout).
    pub errors: u64,
    /// Requests completed (whatever their status).
    pub requests: u64,
}

/// `wrk` with `connections` connections posting `body` to `url` for `secs`.
pub fn wrk(url: &str, key: Option<&str>, body: &str, connections: usize, secs: u64) -> Load {
    wrk_with(url, key, &[], body, connections, secs)
}

/// [`wrk`] with `headers` added to every request.
pub fn wrk_with(
    url: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
    connections: usize,
    secs: u64,
) -> Load {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("post.lua");
    let auth = key.map(|k| format!("wrk.headers[\"Authorization\"] = \"Bearer {k}\"\n")).unwrap_or_default();
    let extra: String = headers.iter().map(|(n, v)| format!("wrk.headers[\"{n}\"] = \"{v}\"\n")).collect();
    let lua = format!(
        "wrk.method = \"POST\"\nwrk.body = [[{body}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n{auth}{extra}"
    );
    std::fs::write(&script, lua).unwrap();
    let threads = connections.min(2).to_string();
    let out = Command::new("wrk")
        .args(["--latency", "-t", &threads, "-c", &connections.to_string(), "-d", &format!("{secs}s"), "-s"])
        .arg(&script)
        .arg(url)
        .output()
        .expect("wrk is not installed: scripts/bench.sh installs it (Debian package wrk)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |prefix: &str| text.lines().find_map(|l| l.trim().strip_prefix(prefix).map(|r| r.trim().to_string()));
    let millis = |s: Option<String>| {
        let s = s.unwrap_or_default();
        let (number, unit) = s.split_at(s.find(|c: char| c.is_alphabetic()).unwrap_or(s.len()));
        let n: f64 = number.parse().unwrap_or(f64::NAN);
        match unit {
            "us" => n / 1e3,
            "ms" => n,
            "s" => n * 1e3,
            _ => f64::NAN,
        }
    };
    Load {
        rate: field("Requests/sec:").and_then(|r| r.parse().ok()).unwrap_or(f64::NAN),
        p50_ms: millis(field("50%")),
        p99_ms: millis(field("99%")),
        // Answers other than 2xx/3xx, and connections that failed or timed
        // out ("Socket errors: connect 0, read 0, write 0, timeout 0").
        errors: field("Non-2xx or 3xx responses:").and_then(|r| r.parse::<u64>().ok()).unwrap_or(0)
            + field("Socket errors:")
                .map(|r| r.split(',').filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok()).sum())
                .unwrap_or(0),
        requests: text
            .lines()
            .find(|l| l.contains(" requests in "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
    }
}

/// Resident memory of this process, bytes (`VmRSS` in `/proc/self/status`).
pub fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}
