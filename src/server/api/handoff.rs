//! `server.live_handoff`: the request, and its start, which waits until what clients sent
//! and the server read is in the panes (the new server could not take it over).

use crate::log;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{reply_line, ApiError, ApiResult, Outcome};
use crate::protocol::api::LiveHandoff;
use crate::server::{ClientId, Server};

/// How long a live handoff waits for clients' input that the server has read to reach
/// the panes (a paste is taken 64 KiB a turn; a client that stalls must not hold it up).
const HANDOFF_INPUT_WAIT: Duration = Duration::from_secs(2);

impl Server {
    pub(super) fn api_live_handoff(
        &mut self,
        conn: ClientId,
        id: &Value,
        p: LiveHandoff,
    ) -> ApiResult {
        use crate::paths::own_binary;
        use crate::server::handoff::export::Request;
        let binary = match p.binary {
            Some(b) => b,
            None => own_binary().map_err(|e| ApiError::new("handoff_failed", e.to_string()))?,
        };
        let expected_protocol = p.expected_protocol;
        let req = Request {
            binary,
            expected_version: p.expected_version,
            expected_protocol,
        };
        if self.input_waiting() {
            self.life.handoff_after_input = Some(crate::server::handoff::Deferred {
                conn,
                id: id.clone(),
                req,
                deadline: Instant::now() + HANDOFF_INPUT_WAIT,
            });
            return Ok(Outcome::Later);
        }
        self.run_live_handoff(conn, id, req)
    }

    /// Starts a handoff that waited for clients' input, once that is in the panes (or
    /// it waited long enough).
    pub(crate) fn handoff_if_input_done(&mut self) {
        let ready = self
            .life
            .handoff_after_input
            .as_ref()
            .is_some_and(|d| !self.input_waiting() || Instant::now() >= d.deadline);
        if !ready {
            return;
        }
        if let Some(d) = self.life.handoff_after_input.take() {
            if let Err(e) = self.run_live_handoff(d.conn, &d.id, d.req) {
                self.api.reply(d.conn, &d.id, Err(e));
            }
        }
    }

    fn run_live_handoff(
        &mut self,
        conn: ClientId,
        id: &Value,
        req: crate::server::handoff::export::Request,
    ) -> ApiResult {
        use crate::server::handoff::export::{Handoff, Parts};
        // (Files kept open to read command lines are only a cache: the handoff's
        // descriptors come first.)
        self.session.runtimes.release_kept_files();
        let parts = Parts {
            session: &self.session,
            clients: &mut self.clients,
            api: &mut self.api,
            listen: &mut self.listen,
            events: &self.events.tx,
            persist: self
                .persist
                .as_ref()
                .map_or((0, None), |p| (p.generation, p.read_only.clone())),
            lock: self.lock.as_ref(),
        };
        let done = Handoff::new(parts, req)
            .run(conn)
            .map_err(|e| ApiError::new("handoff_failed", e.to_string()))?;
        let ms = |d: Duration| (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
        let reply = json!({
            "version": done.version,
            "protocol": done.protocol,
            "pid": done.pid,
            "panes": done.panes,
            "total_ms": ms(done.total),
            "window_ms": ms(done.window),
        });
        log::info!("handoff", "done: {reply}");
        self.api.send_final(conn, reply_line(id, Ok(reply)));
        self.life.handed_off = true;
        self.stop("handed the session to a new server");
        Ok(Outcome::Later)
    }
}
