//! What the session is, apart from who is attached: the layout and facts (`AppState`),
//! the terminals' runtimes, scroll modes, the size panes are laid out for, what programs
//! were last told (focus, colours, what is on screen), and output not looked at yet. No
//! sockets and no clients: the server's other parts read it to draw and to answer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use super::EventTx;
use crate::bindings::Bindings;
use crate::config::Config;
use crate::model::ids::TerminalId;
use crate::model::{AppState, Scroll};
use crate::paths::SessionName;
use crate::pty::TerminalRuntimeRegistry;

pub(crate) struct Session {
    pub(crate) name: SessionName,
    /// Where the server listens: panes are told (`HERDR_SOCKET`), so `herdr` run inside
    /// one reaches this session.
    pub(crate) socket: PathBuf,
    /// Where the terminals' actors report (output, exits, titles).
    pub(crate) events: EventTx,
    pub(crate) config: Config,
    pub(crate) bindings: Bindings,
    pub(crate) state: AppState,
    pub(crate) runtimes: TerminalRuntimeRegistry,
    /// Scroll/copy mode per terminal (shared by every client looking at it, like tmux).
    pub(crate) scroll: BTreeMap<TerminalId, Scroll>,
    /// What copy mode copied last, for prefix `]` and `herdr paste` (tmux's buffer).
    pub(crate) buffer: Option<String>,
    /// This machine's name, for the status line.
    pub(crate) host: String,
    /// The saved machines as the sidebar shows them (kept by the machines part).
    pub(crate) machines: Vec<crate::render::view::MachineRow>,
    /// The latest attach's DISPLAY and the like (`protocol::ATTACH_ENV`), for new panes;
    /// `None` until a client said.
    pub(crate) attach_env: Option<BTreeMap<String, String>>,
    /// The size panes are laid out for: the active client's.
    pub(crate) size: (u16, u16),
    pub(crate) sidebar: bool,
    /// The terminals on screen as last told to them, sorted, and how many there were in
    /// all then (a new terminal is told too).
    pub(crate) shown: Vec<TerminalId>,
    pub(crate) shown_count: usize,
    /// The colours programs' colour queries are answered with: the last attached
    /// client's terminal's, given to every emulator.
    pub(crate) colors: std::sync::Arc<crate::term::vt::Colors>,
    /// The terminal last told it has the focus (mode 1004), if any.
    pub(crate) focus_told: Option<TerminalId>,
    /// Output was taken in since the last timer turn (it may have changed agent states,
    /// so the structure is looked at after it).
    pub(crate) output_taken: bool,
    /// Hidden terminals with output not looked at yet, and when they will be.
    pub(crate) hidden_output: BTreeSet<TerminalId>,
    pub(crate) hidden_output_at: Option<Instant>,
    /// Names it had before a rename, kept for the programs started under them.
    pub(crate) old_names: Vec<super::rename::OldName>,
    /// Terminals mirrored elsewhere (`pane.stream`), at the size of their mirror rather
    /// than of their place in the layout.
    pub(crate) mirror_sizes: BTreeMap<TerminalId, (u16, u16)>,
}

impl Session {
    pub(crate) fn new(
        name: SessionName,
        socket: PathBuf,
        events: EventTx,
        config: Config,
        bindings: Bindings,
    ) -> Session {
        let sidebar = config.sidebar;
        Session {
            old_names: Vec::new(),
            name,
            socket,
            events,
            config,
            bindings,
            state: AppState::default(),
            runtimes: TerminalRuntimeRegistry::default(),
            scroll: BTreeMap::new(),
            buffer: None,
            host: crate::sys::host_name(),
            machines: Vec::new(),
            attach_env: None,
            size: (80, 24),
            sidebar,
            shown: Vec::new(),
            shown_count: 0,
            colors: Default::default(),
            focus_told: None,
            output_taken: false,
            hidden_output: Default::default(),
            hidden_output_at: None,
            mirror_sizes: BTreeMap::new(),
        }
    }

    /// The terminal of the pane numbered `no` (the number users and snapshots know).
    pub(crate) fn terminal_of_pane_no(&self, no: u32) -> Option<TerminalId> {
        self.state
            .panes
            .values()
            .find(|p| p.no.0 == no)
            .map(|p| p.terminal)
    }

    /// Columns of the sidebar as drawn now: none when hidden or when the screen is too
    /// narrow for it.
    pub(crate) fn sidebar_width(&self) -> u16 {
        if self.sidebar && self.size.0 >= self.config.sidebar_width.saturating_mul(3) {
            self.config.sidebar_width
        } else {
            0
        }
    }
}
