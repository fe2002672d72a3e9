//! What the load tests read of a spawned server process and need of their own: its RSS and open
//! descriptors (from /proc), and an open-file limit raised for thousands of client sockets.
//!
//! Guarantees: the readers never panic (a process that is gone reads as 0); the limit is raised
//! to the hard limit, and a hard limit below what the test needs fails it with the number.
#![allow(dead_code)] // each test binary uses a different part of `common`

/// Raise this process's open-file limit to its hard limit; panic when that is under `needed`.
pub fn raise_open_files(needed: usize) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    assert!(limit.rlim_cur as usize > needed, "this test needs {needed} descriptors");
}

/// The resident set of process `pid`, in bytes.
pub fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// How many descriptors process `pid` has open.
pub fn descriptors(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}
