//! Asking a running server for a live handoff and checking who serves afterwards: used by
//! `herdr server handoff` and by `herdr update --handoff`.

use std::time::{Duration, Instant};

use super::api::{ApiClient, Error};
use crate::paths::SessionName;
use crate::protocol::api::{LiveHandoff, NoParams, Request};

pub enum HandedOff {
    NoServer,
    /// What happened, and who serves now (`None` if nobody answers yet).
    Done {
        report: String,
        serving: Option<String>,
    },
}

/// Asks a session's server to hand itself to `binary` (its own path if `None`), then
/// checks which herdr serves afterwards.
pub fn hand_off(
    session: &SessionName,
    binary: Option<&std::path::Path>,
    expected_version: Option<String>,
    expected_protocol: Option<u32>,
) -> Result<HandedOff, Error> {
    let Some(mut api) = ApiClient::connect(session)? else {
        return Ok(HandedOff::NoServer);
    };
    let done = api.request(&Request::LiveHandoff(LiveHandoff {
        binary: binary.map(Into::into),
        expected_version,
        expected_protocol,
    }))?;
    let report = format!(
        "handed session {session} to herdr {} (pid {}): {} pane(s) in {} ms; no-return window {} ms",
        done["version"].as_str().unwrap_or("?"),
        done["pid"],
        done["panes"],
        done["total_ms"],
        done["window_ms"],
    );
    // Say who serves now, as a user would check.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(mut api)) = ApiClient::connect(session) {
            if let Ok(st) = api.request(&Request::ServerStatus(NoParams {})) {
                let serving = format!(
                    "herdr {} (protocol {}, pid {})",
                    st["version"].as_str().unwrap_or("?"),
                    st["protocol"],
                    st["pid"]
                );
                return Ok(HandedOff::Done {
                    report,
                    serving: Some(serving),
                });
            }
        }
        if Instant::now() >= deadline {
            return Ok(HandedOff::Done {
                report,
                serving: None,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
