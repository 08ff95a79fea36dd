//! The arguments of `herdr workspace|tab|pane …`: what each subcommand takes and the help
//! line `--help`, completion and the man page show for it. What each one does with them is
//! in `control.rs`.

use clap::{ArgGroup, Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct Output {
    /// Print the result as JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Where the shell of a new workspace or tab starts.
#[derive(Debug, Args)]
pub struct Cwd {
    /// The folder its shell starts in (relative to this command's folder).
    #[arg(long, value_name = "DIR")]
    pub(super) cwd: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// List the workspaces: id, name, tabs and panes; `*` marks the focused one.
    List(Output),
    /// Create a workspace with one tab running a shell, focus it and print its id.
    Create {
        #[command(flatten)]
        cwd: Cwd,
        /// Its name (default: the name of its folder).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Close a workspace: every program in it is hung up.
    Close {
        /// The workspace (`w2` or `2`; default: the focused one).
        workspace: Option<String>,
    },
    /// Rename a workspace.
    Rename {
        /// The workspace (`w2` or `2`; default: the focused one).
        #[arg(long, value_name = "ID")]
        workspace: Option<String>,
        /// The new name (not empty).
        name: String,
    },
    /// Focus a workspace: attached clients show it.
    Focus {
        /// The workspace (`w2` or `2`).
        workspace: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TabCommand {
    /// List the tabs: id, workspace, title and panes; `*` marks the focused one.
    List {
        /// Only this workspace's tabs (default: every workspace's).
        #[arg(long, value_name = "ID")]
        workspace: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Create a tab running a shell, focus it and print its id.
    Create {
        /// The workspace it goes in (default: the focused one).
        #[arg(long, value_name = "ID")]
        workspace: Option<String>,
        #[command(flatten)]
        cwd: Cwd,
        /// Its name (default: the tab shows its program's title).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Close a tab: every program in it is hung up.
    Close {
        /// The tab (`t2` or `2`; default: the focused workspace's active tab).
        tab: Option<String>,
    },
    /// Rename a tab; an empty name clears it (the tab shows its program's title again).
    Rename {
        /// The tab (`t2` or `2`; default: the focused workspace's active tab).
        #[arg(long, value_name = "ID")]
        tab: Option<String>,
        /// The new name (`""` clears it).
        name: String,
    },
    /// Focus a tab, and the workspace it is in.
    Focus {
        /// The tab (`t2` or `2`).
        tab: String,
    },
}

/// Where `pane split` puts the new pane.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SplitDirection {
    /// Beside the pane, on its right.
    Right,
    /// Below the pane.
    Down,
}

/// The border of a pane that `pane resize` moves.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Edge {
    /// The left border.
    Left,
    /// The right border.
    Right,
    /// The top border.
    Up,
    /// The bottom border.
    Down,
}

#[derive(Debug, Args)]
pub struct Target {
    /// The pane (`p3` or `3`; default: the pane this command runs in, `$HERDR_PANE`, else
    /// the focused one).
    #[arg(long, value_name = "ID")]
    pub(super) pane: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PaneCommand {
    /// List the panes: id, workspace, tab, size, command and folder; `*` marks the focused
    /// one.
    List {
        /// Only this workspace's panes.
        #[arg(long, value_name = "ID")]
        workspace: Option<String>,
        /// Only this tab's panes.
        #[arg(long, value_name = "ID")]
        tab: Option<String>,
        #[command(flatten)]
        out: Output,
    },
    /// Print one pane as `pane list` does (with --json: every field, its agent's state
    /// among them).
    Get {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        out: Output,
    },
    /// Split a pane, focus the new pane and print its id.
    ///
    /// With `-- COMMAND ARGS…` the new pane runs that program instead of the shell.
    Split {
        #[command(flatten)]
        target: Target,
        /// Where the new pane goes.
        #[arg(long, value_enum, default_value = "right")]
        direction: SplitDirection,
        /// The folder the new pane starts in (default: the split pane's folder).
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        #[command(flatten)]
        out: Output,
        /// The program to run and its arguments (default: the shell).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Close a pane: its program is hung up.
    Close {
        #[command(flatten)]
        target: Target,
    },
    /// Focus a pane, switching workspace and tab as needed.
    Focus {
        #[command(flatten)]
        target: Target,
    },
    /// Zoom a pane to fill its tab or unzoom it (toggles; --on or --off forces one).
    Zoom {
        #[command(flatten)]
        target: Target,
        /// Zoom in (nothing changes if it is zoomed).
        #[arg(long, conflicts_with = "off")]
        on: bool,
        /// Zoom out (nothing changes if it is not zoomed).
        #[arg(long)]
        off: bool,
    },
    /// Move one border of a pane outward, making the pane larger.
    Resize {
        #[command(flatten)]
        target: Target,
        /// Which border moves.
        #[arg(long, value_enum)]
        direction: Edge,
        /// How far, in cells (columns for left and right, rows for up and down).
        #[arg(long, value_name = "N", default_value_t = 1)]
        cells: u16,
    },
    /// Name a pane (`label` in its JSON); an empty name clears it.
    Rename {
        #[command(flatten)]
        target: Target,
        /// The new name (`""` clears it).
        name: String,
    },
    /// Send text as typed (no Enter).
    Send {
        #[command(flatten)]
        target: Target,
        /// The text, sent as it is (no escapes are read).
        text: String,
    },
    /// Paste what copy mode copied last into the pane (as a paste: bracketed if its
    /// program asked).
    Paste {
        #[command(flatten)]
        target: Target,
    },
    /// Send named keys, encoded the way the pane's program asked for.
    Keys {
        #[command(flatten)]
        target: Target,
        /// Key names: Enter, Tab, BSpace, Up, PageUp, F5, C-c (Ctrl), M-x (Alt), S-Enter
        /// (Shift), or a single character.
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Send text, then Enter (Enter lands after the text and before later input).
    Submit {
        #[command(flatten)]
        target: Target,
        /// The pause before Enter, in milliseconds, once the program has shown the text
        /// (default 80, at most 10000).
        #[arg(long, value_name = "MS")]
        delay_ms: Option<u64>,
        /// The text to type before Enter.
        text: String,
    },
    /// Print the visible screen, or the last N lines including scrollback.
    Read {
        #[command(flatten)]
        target: Target,
        /// Print the last N lines, scrollback included, instead of the screen.
        #[arg(long, value_name = "N")]
        lines: Option<u64>,
        /// Keep colours and attributes as ANSI sequences.
        #[arg(long)]
        ansi: bool,
        #[command(flatten)]
        out: Output,
    },
    /// Wait until the output matches a regex, the program exits, or the agent is in a state.
    ///
    /// Give exactly one of --output, --exit and --agent-state. Prints the line that
    /// matched, `exited with status N`, or the state.
    #[command(group(
        ArgGroup::new("cond")
            .required(true)
            .args(["output", "exit", "agent_state"])
    ))]
    Wait {
        #[command(flatten)]
        target: Target,
        /// Until a line matches REGEX (`^` and `$` match at line starts and ends; the
        /// last 1000 lines are searched, then every change); prints the line.
        #[arg(long, value_name = "REGEX")]
        output: Option<String>,
        /// Until the pane's program exits (at once if it has); prints its exit status
        /// and exits with it (1 when a signal ended it).
        #[arg(long)]
        exit: bool,
        /// Until the pane's agent is in STATE (working, blocked, idle or done).
        #[arg(long, value_name = "STATE")]
        agent_state: Option<String>,
        /// Give up after this many seconds (exit code 4; default: wait as long as the
        /// pane lives).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<f64>,
        #[command(flatten)]
        out: Output,
    },
}
