//! The session picker (prefix `s`, tmux's `choose-session`): every session of this user
//! with what `herdr session list` says of it — running or saved, panes, clients, agents
//! waiting, last attached. Enter moves the client to the chosen one (it attaches there,
//! starting a saved session's server); Esc or `q` closes it.
//!
//! The sessions are read on a thread of their own (each running server is asked over
//! its socket, with a deadline), never on the server's loop; the picker shows "reading
//! the sessions…" until they come.

use super::{ClientId, Event, Mode, Server};
use crate::client::sessions::Row;
use crate::input::keys::{Key, KeyCode, Mods};
use crate::protocol::frame::ServerMsg;
use crate::render::view::Panel;

/// What one client's picker holds.
#[derive(Debug, Default)]
pub(crate) struct Picker {
    /// `None` while the sessions are being read.
    rows: Option<Vec<Row>>,
    selected: usize,
}

impl Picker {
    /// What the overlay shows; `current` is this server's session, marked with `*`.
    pub(crate) fn panel(&self, current: &str) -> Panel {
        let footer = "↑↓/jk choose · Enter switch · Esc close".to_string();
        let Some(rows) = &self.rows else {
            return Panel {
                title: "sessions".into(),
                rows: vec!["reading the sessions…".into()],
                selected: None,
                footer,
            };
        };
        let lines = crate::client::sessions::lines(rows);
        Panel {
            title: "sessions".into(),
            rows: rows
                .iter()
                .zip(lines)
                .map(|(r, line)| {
                    let mark = if r.name.as_str() == current { '*' } else { ' ' };
                    format!("{mark} {line}")
                })
                .collect(),
            selected: Some(self.selected.min(rows.len().saturating_sub(1))),
            footer,
        }
    }
}

impl Server {
    /// `s`: the picker opens at once and fills when the sessions have been read.
    pub(super) fn open_picker(&mut self, id: ClientId) {
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        if !c.can_switch {
            return self.say(
                "this client cannot switch sessions (an older herdr): detach and run `herdr attach NAME`",
            );
        }
        // A picker still reading keeps its thread; another is not started.
        let reading = c.picker.as_ref().is_some_and(|p| p.rows.is_none());
        if !reading {
            c.picker = Some(Picker::default());
            let events = self.session.events.clone();
            let spawned = std::thread::Builder::new()
                .name("herdr-sessions".into())
                .spawn(move || {
                    let _ = events.send(Event::Sessions(id, crate::client::sessions::all()));
                });
            if let Err(e) = spawned {
                c.picker = None;
                return self.say(format!("cannot read the sessions: {e}"));
            }
        }
        self.set_mode(id, Mode::Sessions);
    }

    /// The sessions a picker asked for: shown with this session chosen.
    pub(super) fn sessions_read(&mut self, id: ClientId, rows: Vec<Row>) {
        let current = self.session.name.as_str();
        let Some(picker) = self
            .clients
            .by_id
            .get_mut(&id)
            .and_then(|c| c.picker.as_mut())
        else {
            return;
        };
        picker.selected = rows
            .iter()
            .position(|r| r.name.as_str() == current)
            .unwrap_or(0);
        picker.rows = Some(rows);
        self.request_render();
    }

    /// A key while the picker shows.
    pub(super) fn picker_key(&mut self, id: ClientId, key: &Key) {
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let Some(picker) = c.picker.as_mut() else {
            return self.set_mode(id, Mode::Normal);
        };
        let last = picker
            .rows
            .as_ref()
            .map_or(0, |r| r.len().saturating_sub(1));
        let ctrl = key.mods.contains(Mods::CTRL);
        match key.code {
            KeyCode::Char('j') | KeyCode::Down if !ctrl => {
                picker.selected = (picker.selected + 1).min(last)
            }
            KeyCode::Char('n') if ctrl => picker.selected = (picker.selected + 1).min(last),
            KeyCode::Char('k') | KeyCode::Up if !ctrl => {
                picker.selected = picker.selected.saturating_sub(1)
            }
            KeyCode::Char('p') if ctrl => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Char('g') | KeyCode::Home => picker.selected = 0,
            KeyCode::Char('G') | KeyCode::End => picker.selected = last,
            KeyCode::Enter => return self.choose_session(id),
            _ => {
                c.picker = None;
                return self.set_mode(id, Mode::Normal);
            }
        }
        self.request_render();
    }

    /// Enter: this session closes the picker; another moves the client there.
    fn choose_session(&mut self, id: ClientId) {
        let Some(c) = self.clients.by_id.get_mut(&id) else {
            return;
        };
        let picker = c.picker.take().unwrap_or_default();
        let chosen = picker
            .rows
            .and_then(|rows| rows.into_iter().nth(picker.selected))
            .map(|r| r.name);
        match chosen {
            Some(name) if name.as_str() != self.session.name.as_str() => {
                if let Some(c) = self.clients.by_id.remove(&id) {
                    c.writer
                        .send_last(ServerMsg::Switch(name.as_str().to_string()).encode());
                    self.abandon_paste(c.paste);
                }
                self.client_left(id);
            }
            _ => self.set_mode(id, Mode::Normal),
        }
    }
}
