//! Creating, closing and sizing panes: the transactions that touch state and runtimes
//! together.
//!
//! Creation is compensating: the new layout is computed on a copy, the PTY is spawned, and
//! only then is state changed — a failed spawn leaves the layout exactly as it was.
//! Closing is ordered: stop the runtime (hang up the child), remove state, repair focus,
//! relayout, redraw.

use std::path::PathBuf;

use ratatui::layout::Rect;

use super::{Event, Server, Session};
use crate::model::ids::{PaneId, TerminalId};
use crate::model::layout::{Layout, SplitDir};
use crate::model::TerminalState;
use crate::pty::actor::ActorParts;
use crate::pty::spawn::{spawn, SpawnError, SpawnSpec};
use crate::pty::{Program, PtyHandle, TerminalRuntime};
use crate::render::view;
use crate::term::Emulator;

#[derive(Debug, thiserror::Error)]
pub enum PaneError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("cannot start the pane's I/O thread: {}", io_reason(.0))]
    Thread(#[from] std::io::Error),
    #[error("no such pane")]
    NoPane,
}

/// An I/O error, or what to do when it is the open-file limit.
fn io_reason(e: &std::io::Error) -> String {
    if crate::sys::nofile::is_exhausted(e) {
        crate::sys::nofile::exhausted_message()
    } else {
        e.to_string()
    }
}

/// Pane transactions: each starts what it needs first and changes the state only once
/// everything started, so a failure leaves the session as it was.
impl Session {
    /// The rectangle the panes of a tab share, at the session size.
    pub(crate) fn pane_area(&self) -> Rect {
        view::pane_area(self.size, self.sidebar_width())
    }

    fn spawn_terminal(
        &mut self,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        rect: Rect,
    ) -> Result<(TerminalState, TerminalRuntime), PaneError> {
        // The public pane number is allocated on commit; it is always the next one.
        let no = self.state.peek_pane_no();
        self.spawn_terminal_as(no, argv, cwd, rect, None)
    }

    /// A fresh shell for a restored pane: its old public number, and the saved screen
    /// (if any) shown before anything the new shell prints.
    pub(crate) fn spawn_restored(
        &mut self,
        no: u32,
        cwd: Option<PathBuf>,
        rect: Rect,
        preface: Option<Vec<u8>>,
    ) -> Result<(TerminalState, TerminalRuntime), PaneError> {
        self.spawn_terminal_as(no, vec![], cwd, rect, preface)
    }

    pub(super) fn spawn_terminal_as(
        &mut self,
        pane_no: u32,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        rect: Rect,
        preface: Option<Vec<u8>>,
    ) -> Result<(TerminalState, TerminalRuntime), PaneError> {
        let id = self.state.alloc_terminal_id();
        let (rows, cols) = (rect.height.max(1), rect.width.max(1));
        let spec = SpawnSpec {
            argv: argv.clone(),
            shell: self.config.shell.clone(),
            cwd: cwd.clone(),
            env: vec![
                ("HERDR_SESSION".into(), self.name.as_str().into()),
                ("HERDR_SOCKET".into(), self.socket.display().to_string()),
                ("HERDR_PANE".into(), format!("p{pane_no}")),
            ]
            .into_iter()
            .chain(self.agent_env())
            .chain(
                self.attach_env
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.clone())),
            )
            .collect(),
            // What the latest client's side does not have, new panes do not get either.
            unset: match &self.attach_env {
                Some(env) => crate::protocol::ATTACH_ENV
                    .iter()
                    .filter(|k| !env.contains_key(**k))
                    .map(|k| k.to_string())
                    .collect(),
                None => Vec::new(),
            },
            rows,
            cols,
        };
        // Listings keep files open only while descriptors are plenty; a new pane is never
        // refused for them.
        if self.runtimes.kept_files() > 0
            && !crate::sys::nofile::has_room(crate::sys::nofile::PANE_START)
        {
            self.runtimes.release_kept_files();
        }
        let spawned = spawn(&spec)?;
        let pid = u32::try_from(spawned.child.pid()).ok();
        let mut emu = Emulator::new(rows, cols, self.config.scrollback_lines);
        emu.set_colors(self.colors.clone());
        // A machine's pane mirrored here: the host's emulator answered its program.
        emu.set_answers(!crate::machine::is_view(&argv));
        if let Some(bytes) = preface {
            // Presentation only: fed to the emulator, never to the program.
            let _ = emu.process(&bytes);
        }
        let emulator = crate::pty::shared(emu);
        let tx = self.events.clone();
        let handle = PtyHandle::start(ActorParts {
            master: spawned.master,
            program: Program::Spawned(spawned.child),
            emulator: emulator.clone(),
            notify: Box::new(move |ev| {
                let _ = tx.send(Event::Pty(id, ev));
            }),
            name: format!("herdr-pty-{}", id.0),
            paused: false,
            preserve: false,
            pending_input: Vec::new(),
        })?;
        // Among the terminals nobody sees until `update_background`, which follows
        // everything that starts one, shows it: so one started in a long turn gives its
        // thread up once idle meanwhile. A restore starts every pane in one turn; with
        // every new terminal's actor running to its end, 1,000 panes had 1,000 threads
        // (when each shell was still forked, each fork copying every thread's stack
        // mappings, that alone made a restore of 1,000 panes 13-14 s instead of 5.3-5.7).
        handle.set_background(true);
        let term = TerminalState::new(id, cwd, argv);
        let rt = TerminalRuntime {
            handle,
            emulator,
            pid,
            size: (rows, cols),
            resized_at: None,
            title_seq: 0,
            foreground_kept: None,
        };
        Ok((term, rt))
    }

    /// `SSH_AUTH_SOCK` for new panes: the session's stable agent link once an attach has
    /// set it (see `paths::agent_link`).
    fn agent_env(&self) -> Option<(String, String)> {
        let link = crate::paths::agent_link(&self.name);
        std::fs::symlink_metadata(&link)
            .ok()
            .map(|_| ("SSH_AUTH_SOCK".to_string(), link.display().to_string()))
    }

    /// The working directory for a pane started "from" the focused one: see
    /// [`Session::cwd_of`].
    pub(crate) fn focused_cwd(&self) -> Option<PathBuf> {
        self.cwd_of(self.state.focused_terminal()?)
    }

    /// Where a terminal's user is now, like tmux's pane_current_path: the folder of the
    /// program in front (a `cd` in a nested shell counts), else of the pane's own
    /// program, else the folder it was started in.
    pub(crate) fn cwd_of(&self, tid: TerminalId) -> Option<PathBuf> {
        let rt = self.runtimes.get(tid);
        rt.and_then(|rt| rt.foreground()?.cwd)
            .or_else(|| std::fs::read_link(format!("/proc/{}/cwd", rt?.pid?)).ok())
            .or_else(|| self.state.terminals.get(&tid)?.cwd.clone())
    }

    pub(crate) fn open_workspace(
        &mut self,
        name: Option<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneId, PaneError> {
        let area = self.pane_area();
        let name = name.or_else(|| workspace_name(cwd.as_deref()));
        let (term, rt) = self.spawn_terminal(vec![], cwd, area)?;
        let pane = self.state.alloc_pane_id();
        let tid = term.id;
        self.runtimes.insert(tid, rt);
        self.state.add_workspace(name, pane, term);
        Ok(pane)
    }

    pub(crate) fn open_tab(
        &mut self,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneId, PaneError> {
        let area = self.pane_area();
        let (term, rt) = self.spawn_terminal(argv, cwd, area)?;
        let pane = self.state.alloc_pane_id();
        self.runtimes.insert(term.id, rt);
        self.state.add_tab(pane, term);
        Ok(pane)
    }

    /// Splits `target` (default: the focused pane) and starts `argv` (default: the shell)
    /// in the new pane. On failure nothing changes.
    pub(crate) fn split_pane(
        &mut self,
        target: Option<PaneId>,
        dir: SplitDir,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneId, PaneError> {
        let target = target
            .or(self.state.focused_pane())
            .ok_or(PaneError::NoPane)?;
        let pos = self.state.find_pane(target).ok_or(PaneError::NoPane)?;
        let tab = self.state.tab_at(pos).ok_or(PaneError::NoPane)?;
        let mut layout: Layout = tab.layout.clone();
        let pane = self.state.alloc_pane_id();
        if !layout.split(target, dir, pane) {
            return Err(PaneError::NoPane);
        }
        let area = self.pane_area();
        let rect = layout
            .geometry(area)
            .into_iter()
            .find(|(p, _)| *p == pane)
            .map(|(_, r)| r)
            .unwrap_or(area);
        let cwd = cwd.or_else(|| {
            let tid = self.state.panes.get(&target)?.terminal;
            self.cwd_of(tid)
        });
        let (term, rt) = self.spawn_terminal(argv, cwd, rect)?;
        self.runtimes.insert(term.id, rt);
        self.state.commit_split(pos, layout, pane, term);
        self.relayout();
        Ok(pane)
    }

    /// Applies the session size to every pane of every tab (hidden ones too, so switching
    /// tabs never shows a stale size).
    pub(crate) fn relayout(&mut self) {
        let area = self.pane_area();
        for ws in &self.state.workspaces {
            for tab in &ws.tabs {
                let geometry = if tab.zoomed {
                    vec![(tab.focused, area)]
                } else {
                    tab.layout.geometry(area)
                };
                for (pane, rect) in geometry {
                    let Some(tid) = self.state.panes.get(&pane).map(|p| p.terminal) else {
                        continue;
                    };
                    let (rows, cols) = self
                        .mirror_sizes
                        .get(&tid)
                        .copied()
                        .unwrap_or((rect.height.max(1), rect.width.max(1)));
                    if let Some(rt) = self.runtimes.get_mut(tid) {
                        rt.resize(rows, cols);
                    }
                }
            }
        }
    }

    /// Lays the panes out for `size` (made sane); whether it changed.
    pub(crate) fn set_size(&mut self, size: (u16, u16)) -> bool {
        let size = sane_size(size);
        if self.size == size {
            return false;
        }
        self.size = size;
        self.relayout();
        true
    }
}

/// What a change of panes means for the rest of the server: a frame, waits, events.
impl Server {
    pub(crate) fn create_workspace(
        &mut self,
        name: Option<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneId, PaneError> {
        let pane = self.session.open_workspace(name, cwd)?;
        self.request_render();
        Ok(pane)
    }

    pub(crate) fn create_tab(&mut self, cwd: Option<PathBuf>) -> Result<PaneId, PaneError> {
        let pane = self.session.open_tab(vec![], cwd)?;
        self.request_render();
        Ok(pane)
    }

    /// Splits `target` (default: the focused pane) and starts `argv` (default: the shell)
    /// in the new pane. On failure nothing changes.
    pub(crate) fn split(
        &mut self,
        target: Option<PaneId>,
        dir: SplitDir,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneId, PaneError> {
        let pane = self.session.split_pane(target, dir, argv, cwd)?;
        self.request_render();
        Ok(pane)
    }

    /// Closes a pane: its program is hung up (and killed after a grace period).
    pub(crate) fn close_pane(&mut self, pane: PaneId) {
        // Its mirrors get the last of what it printed before they are told it closed.
        if let Some(tid) = self.session.state.panes.get(&pane).map(|p| p.terminal) {
            self.pump_mirrors(tid);
        }
        let Some(closed) = self.session.state.close_pane(pane) else {
            return;
        };
        if let Some(rt) = self.session.runtimes.remove(closed.terminal) {
            rt.handle.shutdown();
        }
        self.session.scroll.remove(&closed.terminal);
        self.forget_agent_activity(closed.terminal);
        // Waits on this pane end now (`pane_exited`), not at their timeout.
        self.recheck_waits(Some(closed.terminal));
        if closed.session_empty {
            self.stop("session ended: its last pane closed");
            return;
        }
        self.relayout();
    }

    /// A pane's program ended: record it, tell subscribers and waiters, and close the
    /// pane unless it stays to show its result (`Session::remains`).
    pub(crate) fn terminal_exited(&mut self, tid: TerminalId, code: Option<i32>) {
        let Some(pane) = self.session.state.pane_of_terminal(tid) else {
            return;
        };
        if let Some(t) = self.session.state.terminals.get_mut(&tid) {
            t.exited = Some(code);
        }
        let no = self.session.state.panes.get(&pane).map(|p| p.no);
        if let Some(no) = no {
            self.emit(
                serde_json::json!({ "event": "pane.exited", "id": no.to_string(), "status": code }),
            );
        }
        self.recheck_waits(Some(tid));
        if self.session.remains(tid) {
            // Its number may be another process's soon: nothing is read from it again.
            if let Some(rt) = self.session.runtimes.get_mut(tid) {
                rt.pid = None;
            }
            self.request_render();
            return;
        }
        self.close_pane(pane);
        self.recheck_waits(Some(tid));
        if let (Some(no), Some(code)) = (no, code) {
            if code != 0 {
                self.say(format!("pane {no} exited with status {code}"));
            }
        }
    }

    /// Lays every pane out again (the sidebar or the size changed) and draws.
    pub(crate) fn relayout(&mut self) {
        self.session.relayout();
        self.request_render();
    }

    pub(crate) fn set_size(&mut self, size: (u16, u16)) {
        if self.session.set_size(size) {
            self.request_render();
        }
    }
}

/// A client's terminal size made safe to lay out: a zero dimension (some terminals report
/// 0×0) means unknown, and absurd sizes are clamped.
pub(crate) fn sane_size((cols, rows): (u16, u16)) -> (u16, u16) {
    if cols == 0 || rows == 0 {
        return (80, 24);
    }
    (cols.min(super::MAX_COLS), rows.min(super::MAX_ROWS))
}

/// A new workspace is named after the folder it starts in ("~" for home), like a project.
fn workspace_name(cwd: Option<&std::path::Path>) -> Option<String> {
    // A pane given no folder starts at home.
    let cwd = cwd.map_or_else(crate::paths::home, PathBuf::from);
    if std::env::var_os("HOME").is_some_and(|h| h == cwd.as_os_str()) {
        return Some("~".into());
    }
    cwd.file_name().map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::{Action, Bindings};
    use crate::config::Config;
    use crate::paths::SessionName;

    fn server() -> Server {
        let config = Config {
            shell: "/bin/sh".into(),
            ..Config::default()
        };
        let mut s = Server::new(
            SessionName::parse("unit").unwrap(),
            PathBuf::from("/nonexistent/unit.sock"),
            config,
            Bindings::default(),
        );
        s.create_workspace(None, None).unwrap();
        s
    }

    #[test]
    fn a_split_whose_program_cannot_start_leaves_the_layout_unchanged() {
        let _guard = crate::sys::test_fd_lock();
        let mut s = server();
        let before = s.session.state.active_tab().unwrap().clone();
        let err = s
            .split(
                None,
                SplitDir::Right,
                vec!["/nonexistent/agent".into()],
                None,
            )
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/agent"), "{err}");
        assert_eq!(s.session.state.active_tab().unwrap(), &before);
        assert_eq!(s.session.state.pane_count(), 1);
        assert_eq!(s.session.runtimes.len(), 1);

        // Through the keyboard path the user is told why.
        s.session.config.shell = "/nonexistent/shell".into();
        s.action(0, Action::SplitRight);
        assert_eq!(s.session.state.active_tab().unwrap(), &before);
        let msg = s
            .clients
            .message
            .as_ref()
            .map(|(m, _)| m.clone())
            .unwrap_or_default();
        assert!(
            msg.contains("split failed") && msg.contains("/nonexistent/shell"),
            "{msg}"
        );
        // A later split that works gets the next public pane number (no gap).
        s.session.config.shell = "/bin/sh".into();
        let p = s.split(None, SplitDir::Down, vec![], None).unwrap();
        assert_eq!(s.session.state.panes[&p].no.0, 2);
        s.shutdown();
    }

    #[test]
    fn updating_a_frame_in_place_matches_composing_it_afresh() {
        use crate::render::ui::{self, ComposeCache};
        use crate::render::view::Overlay;
        let _guard = crate::sys::test_fd_lock();
        // Programs that print nothing by themselves: only the test writes to the screens.
        let mut s = server();
        // The first pane's shell prints its prompt once; wait for it to be quiet.
        let first = s.session.state.focused_terminal().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while crate::pty::lock(&s.session.runtimes.get(first).unwrap().emulator)
            .screen()
            .contents()
            .trim()
            .is_empty()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the shell never printed a prompt"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        s.split(
            None,
            SplitDir::Right,
            vec!["sleep".into(), "60".into()],
            None,
        )
        .unwrap();
        s.split(
            None,
            SplitDir::Down,
            vec!["sleep".into(), "60".into()],
            None,
        )
        .unwrap();
        // Each pane's I/O thread applies its new size in its own time: wait for all of
        // them, or a late resize would change a screen between two frames.
        let area = s.session.pane_area();
        let tab = s.session.state.active_tab().unwrap().clone();
        for (pane, rect) in view::tab_geometry(&tab, area) {
            let tid = s.session.state.panes[&pane].terminal;
            let emulator = s.session.runtimes.get(tid).unwrap().emulator.clone();
            while crate::pty::lock(&emulator).size() != (rect.height, rect.width) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "a pane never took its size"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        let size = s.session.size;
        let mut cache = ComposeCache::default();
        let mut frame = ui::compose(
            &s.session.view(Overlay::None, None, &s.session.bindings),
            size,
            &mut cache,
        );
        let steps: [&[u8]; 4] = [
            b"\x1b[2J\x1b[Hhello",
            b"\r\n\x1b[1;32mgreen\x1b[0m world",
            "\r\n漢字".as_bytes(),
            b"\x1b]2;new title\x07",
        ];
        for (i, step) in steps.iter().enumerate() {
            let tid = s.session.state.focused_terminal().unwrap();
            let emulator = s.session.runtimes.get(tid).unwrap().emulator.clone();
            let effects = crate::pty::lock(&emulator).process(step);
            if effects.title_changed {
                // What the terminal's I/O thread reports, as it would.
                let (title, seq) = {
                    let emu = crate::pty::lock(&emulator);
                    (emu.title().to_string(), emu.seq())
                };
                s.pty_event(tid, crate::pty::PtyEvent::Title { title, seq });
            }
            if i == 2 {
                s.say("a status message");
            }
            let view = s.session.view(
                Overlay::None,
                s.clients.message.as_ref().map(|(m, _)| m.as_str()),
                &s.session.bindings,
            );
            let mut dirty = Vec::new();
            assert!(ui::compose_update(
                &view, size, &mut frame, &mut cache, &mut dirty
            ));
            let fresh = ui::compose(&view, size, &mut ComposeCache::default());
            assert_eq!(frame, fresh, "step {i}");
            assert!(
                dirty.iter().any(|d| *d) && !dirty.iter().all(|d| *d),
                "only some rows change"
            );
        }
        // Changes of what only the sidebar and the tab bar show: each must reach the frame
        // (the chrome is redrawn only when its signature changes).
        let first_tab = s.session.state.active_tab().unwrap().focused;
        let first_term = s.session.state.panes[&first_tab].terminal;
        // (A program that prints nothing: a shell's prompt drawn between the two frames
        // compared would differ.)
        let second = (s.session)
            .open_tab(vec!["sleep".into(), "60".into()], None)
            .unwrap();
        type Change<'a> = (&'a str, &'a dyn Fn(&mut Server));
        let changes: [Change; 7] = [
            ("a second tab", &|_| {}),
            ("a tab renamed", &|s| {
                let ws = s.session.state.active;
                s.session.state.workspaces[ws].tabs[0].name = Some("renamed".into());
            }),
            ("a workspace renamed", &|s| {
                let ws = s.session.state.active;
                s.session.state.workspaces[ws].name = "elsewhere".into();
            }),
            ("an agent found", &|s| {
                let t = s.session.state.terminals.get_mut(&first_term).unwrap();
                t.agent = Some("claude".into());
                t.agent_state = Some("working".into());
            }),
            ("another agent in the same state", &|s| {
                s.session
                    .state
                    .terminals
                    .get_mut(&first_term)
                    .unwrap()
                    .agent = Some("codex".into());
            }),
            ("the agent idle while unseen: done", &|s| {
                s.session
                    .state
                    .terminals
                    .get_mut(&first_term)
                    .unwrap()
                    .agent_state = Some("idle".into());
                s.session.state.panes.get_mut(&first_tab).unwrap().seen = false;
            }),
            ("a title in a hidden tab", &|s| {
                let tid = s.session.state.panes[&second].terminal;
                s.session.state.terminals.get_mut(&tid).unwrap().title = "far away".into();
            }),
        ];
        for (what, change) in changes {
            change(&mut s);
            let view = s.session.view(Overlay::None, None, &s.session.bindings);
            let mut dirty = Vec::new();
            if ui::compose_update(&view, size, &mut frame, &mut cache, &mut dirty) {
                let fresh = ui::compose(&view, size, &mut ComposeCache::default());
                assert_eq!(frame, fresh, "{what}");
                assert!(dirty.iter().any(|d| *d), "{what}: nothing redrawn");
            } else {
                // The layout changed (a new tab is shown): composed afresh, and updated once
                // unchanged, so the cache holds the signature the next change must differ
                // from.
                frame = ui::compose(&view, size, &mut cache);
                assert!(ui::compose_update(
                    &view, size, &mut frame, &mut cache, &mut dirty
                ));
                assert!(
                    !dirty.iter().any(|d| *d),
                    "{what}: redrawn without a change"
                );
            }
        }
        s.shutdown();
    }

    #[test]
    fn an_older_title_event_never_replaces_a_newer_title() {
        let _guard = crate::sys::test_fd_lock();
        let mut s = server();
        let tid = s.session.state.focused_terminal().unwrap();
        let title = |s: &Server| s.session.state.terminals[&tid].title.clone();
        let event = |title: &str, seq| crate::pty::PtyEvent::Title {
            title: title.into(),
            seq,
        };
        s.pty_event(tid, event("newer", 7));
        assert_eq!(title(&s), "newer");
        // Read by the pane's I/O thread before the one above, handled after it.
        s.pty_event(tid, event("older", 5));
        assert_eq!(title(&s), "newer");
        s.pty_event(tid, event("newest", 8));
        assert_eq!(title(&s), "newest");
        s.shutdown();
    }

    #[test]
    fn tiny_and_absurd_sizes_never_crash_the_renderer() {
        use crate::render::ui::{self, ComposeCache};
        use crate::render::view::Overlay;
        let _guard = crate::sys::test_fd_lock();
        let mut s = server();
        let tid = s.session.state.focused_terminal().unwrap();
        s.enter_scroll(tid);
        for size in [(80, 1), (1, 1), (0, 0), (65535, 65535), (3, 2)] {
            s.set_size(size);
            assert!(
                s.session.size.0 <= 1000
                    && s.session.size.1 <= 500
                    && s.session.size.0 > 0
                    && s.session.size.1 > 0,
                "{:?}",
                s.session.size
            );
            let size = s.session.size;
            for overlay in [Overlay::None, Overlay::Help, Overlay::Prefix] {
                let frame = ui::compose(
                    &s.session
                        .view(overlay, Some("message"), &s.session.bindings),
                    size,
                    &mut ComposeCache::default(),
                );
                assert_eq!(frame.size(), size);
            }
        }
        s.shutdown();
    }
}
