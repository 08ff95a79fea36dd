//! Test-only fault injection at named points (a handoff step, a restore spawn), from
//! `HERDR_TEST_FAULT`. Compiled only with the `fault-injection` feature; release builds
//! have no such switch.

#[cfg(feature = "fault-injection")]
pub fn at(point: &str) -> bool {
    std::env::var("HERDR_TEST_FAULT").is_ok_and(|v| v == point)
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn at(_point: &str) -> bool {
    false
}
