//! What a client needs to notice that the machine slept or the process was stopped: the
//! time spent suspended (CLOCK_BOOTTIME runs on through a suspend, CLOCK_MONOTONIC does
//! not), and SIGCONT.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn read(clock: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the one we own; an unknown clock
    // (a kernel without CLOCK_BOOTTIME) is an error, not undefined behaviour.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    (r == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// How long the machine has been suspended since it booted (CLOCK_BOOTTIME less
/// CLOCK_MONOTONIC; it grows only across a sleep). None where there is no such clock.
pub fn time_suspended() -> Option<Duration> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let boot = read(libc::CLOCK_BOOTTIME)?;
        let mono = read(libc::CLOCK_MONOTONIC)?;
        Some(boot.saturating_sub(mono))
    }
    #[cfg(target_os = "macos")]
    {
        // (macOS: CLOCK_MONOTONIC counts sleep, CLOCK_UPTIME_RAW does not.)
        let up = read(libc::CLOCK_UPTIME_RAW)?;
        let mono = read(libc::CLOCK_MONOTONIC)?;
        Some(mono.saturating_sub(up))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
    {
        None
    }
}

/// A flag set each time this process gets SIGCONT (it was stopped, and goes on).
pub fn sigcont_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGCONT, flag.clone())?;
    Ok(flag)
}

#[cfg(test)]
mod tests {
    #[test]
    fn time_suspended_is_readable_and_does_not_shrink() {
        let a = super::time_suspended().expect("the clocks are there");
        let b = super::time_suspended().unwrap();
        // (Both clocks advance together while awake; rounding may differ by a tick.)
        assert!(
            b + std::time::Duration::from_millis(1) >= a,
            "{a:?} then {b:?}"
        );
    }
}
