//! Which of the host's two implementations runs: Linux's own (openat2, a child subreaper, the parent-death
//! signal) or the portable one every other Unix gets (an `O_NOFOLLOW` walk, a watchdog pipe, escaped
//! commands found by their marker). Debug builds on Linux take the portable one when
//! `STEPWISE_PORTABLE_HOST=1`, so the test suite runs the macOS code paths here too.

/// The variable that selects the portable paths in a Linux debug build.
pub const PORTABLE_ENV: &str = "STEPWISE_PORTABLE_HOST";

#[cfg(target_os = "linux")]
pub fn portable() -> bool {
    #[cfg(debug_assertions)]
    {
        static PORTABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *PORTABLE.get_or_init(|| std::env::var_os(PORTABLE_ENV).is_some_and(|v| v == "1"))
    }
    #[cfg(not(debug_assertions))]
    {
        false
    }
}

#[cfg(not(target_os = "linux"))]
pub fn portable() -> bool {
    true
}
