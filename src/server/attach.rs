//! A client joining the session: its connection becomes a `Client`, with the key
//! bindings it may bring (`--remote-keybindings local`) and the environment of where it
//! attaches from, for the panes started afterwards.

use crate::log;
use std::path::PathBuf;

use super::{panes, Attaching, Client, ClientId, Mode, Server};
use crate::bindings::Bindings;
use crate::config::Config;
use crate::input::InputParser;
use crate::protocol::frame::ServerMsg;
use crate::render::ui;

impl Server {
    /// A client said hello: it gets its own key bindings if it brought them, new panes
    /// get its DISPLAY and the like, and it becomes the active client.
    pub(super) fn attach(&mut self, a: Attaching) {
        let Attaching {
            id,
            writer,
            size,
            keys,
            env,
            cwd,
            reader,
            pending,
            tty,
            terminal,
            switch,
            token,
            resume,
        } = a;
        self.use_colors(terminal.colors.clone());
        let bindings = keys.map(|k| self.client_bindings(id, k));
        if let Some(mut env) = env {
            // Only what belongs to where the client is; never HERDR_* and the like.
            env.retain(|k, _| crate::protocol::ATTACH_ENV.contains(&k.as_str()));
            self.session.attach_env = Some(env);
        }
        let size = panes::sane_size(size);
        log::debug!(
            format_args!("client {id}"),
            "attached: {}x{}, its terminal {}, keys {:?}, notify {:?}",
            size.0,
            size.1,
            if tty.is_some() { "handed over" } else { "kept" },
            terminal.keys,
            terminal.notify
        );
        if self.session.state.workspaces.is_empty() {
            // Like tmux: a session's first pane starts where the user ran herdr.
            if let Err(e) = self.create_workspace(None, cwd) {
                writer.send_last(ServerMsg::Exit(e.to_string()).encode());
                return;
            }
        }
        let mut decoder = crate::protocol::frame::Decoder::default();
        decoder.push(&pending);
        self.clients.attached_at = Some(crate::persist::unix_now());
        self.clients.by_id.insert(
            id,
            Client {
                writer,
                reader,
                tty,
                decoder,
                size,
                prev: None,
                mode: Mode::Normal,
                parser: InputParser::new(),
                drag: None,
                mouse_select: None,
                last_click: None,
                behind: false,
                input_flush_at: None,
                room_wait: None,
                repeat_until: None,
                typed: String::new(),
                help_scroll: 0,
                picker: None,
                can_switch: switch,
                backlog: super::input::Backlog::default(),
                paste: None,
                bindings,
                keys: terminal.keys,
                notify: super::notify::client_style(
                    &self.session.config.notify_terminal,
                    terminal.notify,
                ),
                notify_said: terminal.notify,
                owed: Vec::new(),
                focused: true,
                consumed: Vec::new(),
                cache: ui::ComposeCache::default(),
                spare: None,
                spare_stale: Vec::new(),
                spare_cols: Vec::new(),
                frames: token.map(super::resume::FrameLog::new),
                unknown_rows: None,
            },
        );
        if let Some(resume) = resume {
            let drawn = resume.frame;
            if !self.resume(id, resume) {
                // (Numbered on from the client's frame, so it is never mistaken for one
                // of these if the link drops again before the full frame lands.)
                if let Some(c) = self.clients.by_id.get_mut(&id) {
                    let token = c.frames.take().map(|f| f.token);
                    c.frames = token.map(|t| super::resume::FrameLog::after(t, drawn));
                }
            }
        }
        self.clients.active = Some(id);
        self.set_size(size);
        self.request_render();
    }

    /// A client back after its link dropped takes over the screen it was sent: from the
    /// client still attached with its token (this end has not noticed that connection is
    /// dead — it is ended now: never two attachments of one client) or from the parking.
    /// Its next frame draws only the rows it does not have. False when its screen cannot
    /// be taken up (the next frame is a full one).
    fn resume(&mut self, id: ClientId, resume: crate::protocol::Resume) -> bool {
        let same = |c: &Client| {
            c.frames
                .as_ref()
                .is_some_and(|f| super::handoff::same_token(&f.token, &resume.token))
        };
        let old = self
            .clients
            .by_id
            .iter()
            .find(|(cid, c)| **cid != id && same(c))
            .map(|(cid, _)| *cid);
        let taken = match old.and_then(|old| self.clients.by_id.remove(&old).map(|c| (old, c))) {
            Some((old, mut c)) => {
                log::debug!(
                    format_args!("client {old}"),
                    "replaced by client {id}, which came back"
                );
                c.writer.close();
                let taken = c.frames.take().zip(c.prev.take());
                self.abandon_paste(c.paste);
                self.client_left(old);
                taken
            }
            None => self
                .clients
                .parking
                .take(&resume.token, std::time::Instant::now())
                .map(|p| (p.log, p.frame)),
        };
        let Some(client) = self.clients.by_id.get_mut(&id) else {
            return false;
        };
        let Some((log, frame)) = taken.filter(|(_, f)| f.size() == client.size) else {
            return false;
        };
        let Some(mut unknown) = log.unknown_since(resume.frame) else {
            return false;
        };
        // (The client's note was drawn over its last row.)
        if let Some(last) = unknown.last_mut() {
            *last = true;
        }
        log::debug!(
            format_args!("client {id}"),
            "back at frame {}: {} of {} rows to draw",
            resume.frame,
            unknown.iter().filter(|u| **u).count(),
            unknown.len()
        );
        client.prev = Some(frame);
        client.frames = Some(log);
        client.unknown_rows = Some(unknown);
        true
    }

    /// The key bindings a client brought, built like the server's own from its config.
    fn client_bindings(&self, id: ClientId, keys: crate::protocol::ClientKeys) -> Bindings {
        let config = Config {
            prefix: keys.prefix,
            keys: keys
                .keys
                .into_iter()
                .map(|(key, action)| crate::config::KeySetting {
                    key,
                    action,
                    line: 0,
                })
                .collect(),
            ..Config::default()
        };
        let origin = PathBuf::from(format!("(client {id}'s config)"));
        let (bindings, diags) = Bindings::from_config(&config, &origin);
        for d in diags {
            log::warn!(format_args!("client {id}"), "key bindings: {d}");
        }
        bindings
    }

    /// The key bindings that apply to a client's keys.
    pub(crate) fn bindings_of(&self, id: ClientId) -> &Bindings {
        self.clients
            .by_id
            .get(&id)
            .and_then(|c| c.bindings.as_ref())
            .unwrap_or(&self.session.bindings)
    }
}
