//! The API's connections: who is connected, what is queued to them, and who is dropped
//! when it stops reading. Only this part touches the connections; the requests' handlers
//! answer through it.

use crate::log;
use std::time::Duration;

use serde_json::{json, Value};

use super::{budget_spent, reply_line, too_large_reply, ApiConn, ApiError, ApiState};
use crate::server::conn::{ApiWriter, Refused, MAX_API_REPLY};
use crate::server::ClientId;

impl ApiState {
    pub fn has_subscribers(&self) -> bool {
        self.conns.values().any(|c| c.subscribed)
    }

    pub(crate) fn open(&mut self, id: ClientId, writer: ApiWriter, peer_pid: i32) {
        self.conns.insert(
            id,
            ApiConn {
                writer,
                subscribed: false,
                draining: false,
                peer_pid,
            },
        );
    }

    /// A live handoff begins: waits are answered with an error that says to retry, every
    /// API connection but `keep` (the one that asked) is ended after its queued lines.
    pub(crate) fn end_for_handoff(&mut self, keep: ClientId) {
        let waits = std::mem::take(&mut self.waits);
        for w in waits {
            let err = ApiError::new(
                "handoff_in_progress",
                "live update in progress: the server is being replaced; reconnect and retry",
            );
            self.send(w.conn, reply_line(&w.id, Err(err)));
        }
        let ids: Vec<ClientId> = self.conns.keys().copied().filter(|&c| c != keep).collect();
        for id in ids {
            if let Some(c) = self.conns.remove(&id) {
                if c.subscribed {
                    let line = json!({ "event": "server.handoff", "message": "live update in progress; reconnect and subscribe again" });
                    let _ = c.writer.try_send(line.to_string());
                }
                // Dropping the writer lets its thread write what is queued, then close.
            }
        }
    }

    /// Sends a last reply and waits (bounded) until it is written.
    pub(crate) fn send_final(&mut self, conn: ClientId, line: String) {
        if let Some(c) = self.conns.get(&conn) {
            if c.writer.try_send_error(line).is_ok() {
                c.writer.flush_wait(Duration::from_secs(2));
            }
        }
    }

    pub(crate) fn closed(&mut self, id: ClientId) {
        if self.owes(id) {
            // A peer that only stopped writing still reads its answers; one that is gone
            // entirely must not hold waits (and the server's budget of them).
            let conn = self.conns.get_mut(&id).filter(|c| !c.writer.peer_gone());
            if let Some(c) = conn {
                c.draining = true;
                c.subscribed = false;
                return;
            }
        }
        self.conns.remove(&id);
        self.waits.retain(|w| w.conn != id);
    }

    /// Drops draining connections whose peer has gone away since, with their waits.
    pub(crate) fn forget_gone(&mut self) {
        let gone: Vec<ClientId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.draining && c.writer.peer_gone())
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.conns.remove(&id);
            self.waits.retain(|w| w.conn != id);
        }
    }

    /// Drops draining connections that have nothing left to answer.
    pub(crate) fn reap_drained(&mut self) {
        let (waits, owed) = (&self.waits, &self.owed);
        self.conns.retain(|id, c| {
            !c.draining || owed.contains_key(id) || waits.iter().any(|w| w.conn == *id)
        });
    }

    /// Whether a reply is still owed to connection `id` (a wait, or a forwarded call).
    fn owes(&self, id: ClientId) -> bool {
        self.owed.contains_key(&id) || self.waits.iter().any(|w| w.conn == id)
    }

    /// Another part will answer a request of `conn` later.
    pub(crate) fn owe(&mut self, conn: ClientId) {
        *self.owed.entry(conn).or_default() += 1;
    }

    /// Gives a reply owed (see [`ApiState::owe`]): `error`, when given, is a code and
    /// message as another server gave them, passed on as they are.
    pub(crate) fn pay(
        &mut self,
        conn: ClientId,
        id: &Value,
        result: Result<Value, ApiError>,
        error: Option<(&str, &str)>,
    ) {
        if let std::collections::btree_map::Entry::Occupied(mut n) = self.owed.entry(conn) {
            *n.get_mut() -= 1;
            if *n.get() == 0 {
                n.remove();
            }
        }
        match error {
            Some((code, message)) => {
                let line = json!({ "id": id, "error": { "code": code, "message": message } });
                self.send_reply(conn, id, line.to_string());
            }
            None => self.reply(conn, id, result),
        }
        self.reap_drained();
    }

    pub(crate) fn too_long(&mut self, id: ClientId) {
        let msg = format!(
            "request line longer than {} bytes",
            crate::server::conn::MAX_API_LINE
        );
        self.send(
            id,
            reply_line(&Value::Null, Err(ApiError::new("too_large", msg))),
        );
        // Dropping the writer lets its thread flush the error, then close the connection.
        self.conns.remove(&id);
        self.waits.retain(|w| w.conn != id);
    }

    /// Sends one line to an API connection; a peer that is not reading is dropped (so is a
    /// subscriber whose event finds the budget of all connections spent).
    pub(crate) fn send(&mut self, id: ClientId, line: String) {
        if let Err(why) = self.queue(id, line) {
            self.disconnect(id, &why);
        }
    }

    /// Sends the reply to a request. One too large to send is answered `too_large`; one
    /// that finds the budget of all connections spent (after stalled peers were dropped)
    /// is answered `busy`; a peer that is not reading is dropped.
    pub(crate) fn reply(&mut self, conn: ClientId, id: &Value, result: Result<Value, ApiError>) {
        self.send_reply(conn, id, reply_line(id, result));
    }

    /// [`ApiState::reply`] for a result already written as JSON text.
    pub(crate) fn reply_json(&mut self, conn: ClientId, id: &Value, result: &str) {
        self.send_reply(conn, id, format!("{{\"id\":{id},\"result\":{result}}}"));
    }

    /// [`ApiState::reply`] for a reply line already made.
    fn send_reply(&mut self, conn: ClientId, id: &Value, line: String) {
        let line = match line.len() >= MAX_API_REPLY {
            true => reply_line(id, Err(too_large_reply(line.len(), None))),
            false => line,
        };
        let refused = match self.queue(conn, line) {
            Ok(()) => return,
            Err(Refused::Budget(_)) => budget_spent(),
            Err(why) => return self.disconnect(conn, &why),
        };
        let sent = self
            .conns
            .get(&conn)
            .map(|c| c.writer.try_send_error(reply_line(id, Err(refused))));
        if let Some(Err(why)) = sent {
            self.disconnect(conn, &why);
        }
    }

    /// Queues a line; when the budget of all connections is spent, the connections that
    /// stopped reading are dropped first and the line tried again.
    fn queue(&mut self, id: ClientId, line: String) -> Result<(), Refused> {
        let Some(conn) = self.conns.get(&id) else {
            return Ok(());
        };
        let line = match conn.writer.try_send(line) {
            Err(Refused::Budget(line)) => line,
            other => return other,
        };
        self.drop_stalled(id);
        match self.conns.get(&id) {
            Some(conn) => conn.writer.try_send(line),
            None => Ok(()),
        }
    }

    /// Whether a big reply could be queued now (stalled peers are dropped to make room):
    /// when not, a request for one is refused before its reply is built, so peers that do
    /// not read cannot keep the server thread busy building replies for nobody.
    pub(super) fn room_for_big_reply(&mut self, id: ClientId) -> bool {
        if crate::server::conn::api_budget_spent() {
            self.drop_stalled(id);
        }
        !crate::server::conn::api_budget_spent()
    }

    fn drop_stalled(&mut self, id: ClientId) {
        let stalled: Vec<ClientId> = self
            .conns
            .iter()
            .filter(|(c, conn)| **c != id && conn.writer.stalled())
            .map(|(c, _)| *c)
            .collect();
        for c in stalled {
            self.disconnect(c, &Refused::Behind);
        }
    }

    fn disconnect(&mut self, id: ClientId, why: &Refused) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        match why {
            Refused::Behind => log::warn!(
                format_args!("api connection {id}"),
                "not reading its replies/events ({} bytes queued); \
                 disconnecting",
                conn.writer.queued()
            ),
            Refused::Budget(_) => log::warn!(
                format_args!("api connection {id}"),
                "an event found the server's budget for queued \
                 replies spent; disconnecting"
            ),
        }
        conn.writer.close();
        self.closed(id);
    }
}
