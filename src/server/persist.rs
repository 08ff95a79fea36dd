//! The server's side of cold persistence: capturing a snapshot of the live session,
//! deciding when to save (see `persist::schedule`), and rebuilding a session from a
//! snapshot at start-up.

use crate::log;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Event, Server};
use crate::agent::SessionRef;
use crate::model::ids::PaneId;
use crate::model::layout::{LayoutTree, SplitDir};
use crate::model::TerminalState;
use crate::persist::schedule::SaveSchedule;
use crate::persist::snapshot::{
    DirSnap, HistorySnapshot, LayoutSnap, PaneHistory, PaneSnap, SessionSnapshot, SNAPSHOT_VERSION,
};
use crate::persist::{self, HistoryAction, Loaded, Paths, SaveJob, SaveReport, Saver};
use crate::pty::{lock, TerminalRuntime};
use crate::server::rebuild::PaneStartError;
use ratatui::layout::Rect;

/// How often the server looks for changes that are not structural (a shell's `cd`, a
/// program started in a pane) and saves them, while programs print (such a change comes
/// with output: the prompt after a `cd`, the program's first screen)…
const RESCAN_INTERVAL: Duration = Duration::from_secs(5);
/// …and while nothing prints at all (a change made silently is saved all the same): an
/// idle session of a thousand panes is not read from /proc every few seconds.
const RESCAN_IDLE: Duration = Duration::from_secs(60);
/// Shortest time between two comparisons of the session's structure with the last one.
const NOTE_INTERVAL: Duration = Duration::from_millis(100);

/// Persistence state of a running server.
pub(crate) struct Persistence {
    paths: Paths,
    schedule: SaveSchedule,
    saver: Saver,
    /// Set when the files on disk must not be written (a newer herdr's session).
    pub(crate) read_only: Option<String>,
    pub(crate) generation: u64,
    /// The structure as of the last noted change (no /proc facts), to spot changes.
    pub(super) last_structure: Option<SessionSnapshot>,
    /// What was last handed to the saver (full), to skip identical saves.
    last_saved: Option<SessionSnapshot>,
    next_rescan: Instant,
    last_rescan: Instant,
    pub last_report: Option<SaveReport>,
    /// When the structure was last compared, and whether a change may have come since.
    last_note: Option<Instant>,
    note_pending: bool,
}

impl Persistence {
    pub fn start(dir: PathBuf, events: super::EventTx) -> std::io::Result<Persistence> {
        let paths = Paths::in_dir(&dir);
        let saver = Saver::start(paths.clone(), move |report| {
            let _ = events.send(Event::Saved(report));
        })?;
        Ok(Persistence {
            paths,
            schedule: SaveSchedule::default(),
            saver,
            read_only: None,
            generation: 0,
            last_structure: None,
            last_saved: None,
            next_rescan: Instant::now() + RESCAN_INTERVAL,
            last_rescan: Instant::now(),
            last_report: None,
            last_note: None,
            note_pending: false,
        })
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The session's files change folder (a rename): the saver finishes what it was
    /// writing, `relocate` moves the files and says where they are now, and a saver starts
    /// again there — in the old folder if the move failed (its error is returned).
    pub(crate) fn relocate(
        &mut self,
        events: super::EventTx,
        relocate: impl FnOnce() -> std::io::Result<PathBuf>,
    ) -> std::io::Result<()> {
        self.saver.finish();
        let moved = relocate();
        if let Ok(dir) = &moved {
            self.paths = Paths::in_dir(dir);
        }
        self.saver = Saver::start(self.paths.clone(), move |report| {
            let _ = events.send(Event::Saved(report));
        })?;
        // Saved again in the new place at the next chance.
        self.last_saved = None;
        moved.map(drop)
    }
}

/// Programs that run scripts: `node /usr/bin/npm run dev` is matched as `npm run dev`.
const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "bun", "deno", "python", "python3", "ruby", "perl",
];

/// Whether a foreground command line is one the user asked to have re-run on restore.
/// An entry matches when its words equal the start of the command line, comparing the
/// program by name (`vim` matches `/usr/bin/vim notes.md`); a known interpreter in front
/// is skipped. A command line with control characters never matches: typed into a
/// terminal, they would act (^U erases the line, ^C interrupts) whatever the quoting.
pub fn restorable(argv: &[String], allowed: &[String]) -> bool {
    if argv.iter().any(|w| w.chars().any(|c| c.is_control())) {
        return false;
    }
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let matches = |argv: &[String], entry: &[&str]| {
        !entry.is_empty()
            && argv.len() >= entry.len()
            && base(&argv[0]) == base(entry[0])
            && argv[1..entry.len()]
                .iter()
                .zip(&entry[1..])
                .all(|(a, e)| a == e)
    };
    let skip_interpreter = argv
        .first()
        .is_some_and(|a| INTERPRETERS.contains(&base(a).as_str()));
    allowed.iter().any(|entry| {
        let words: Vec<&str> = entry.split_whitespace().collect();
        matches(argv, &words) || (skip_interpreter && argv.len() > 1 && matches(&argv[1..], &words))
    })
}

/// Quotes a word for a POSIX shell.
/// `=` and `~` are always quoted: zsh expands `=word`, shells expand a leading `~`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,+@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

pub(super) fn snap_to_tree(snap: &LayoutSnap, id: &HashMap<u32, PaneId>) -> Option<LayoutTree> {
    Some(match snap {
        LayoutSnap::Pane { pane } => LayoutTree::Pane(*id.get(pane)?),
        LayoutSnap::Split {
            split,
            ratio,
            first,
            second,
        } => LayoutTree::Split {
            dir: match split {
                DirSnap::Right => SplitDir::Right,
                DirSnap::Down => SplitDir::Down,
            },
            ratio: *ratio,
            first: Box::new(snap_to_tree(first, id)?),
            second: Box::new(snap_to_tree(second, id)?),
        },
    })
}

impl Server {
    /// After anything that may have changed the structure: schedule a save if it did.
    /// The comparison captures the whole session, so it runs at most every
    /// `NOTE_INTERVAL` (the first after a quiet moment at once): a storm of events, such
    /// as many panes printing, costs a few captures a second, not one per event.
    pub(crate) fn persist_note_change(&mut self) {
        if self.persist.as_ref().is_none_or(|p| p.read_only.is_some())
            || self.life.stopping.is_some()
        {
            return;
        }
        let now = Instant::now();
        let Some(p) = self.persist.as_mut() else {
            return;
        };
        p.note_pending = true;
        if p.last_note.is_none_or(|t| now >= t + NOTE_INTERVAL) {
            self.persist_compare(now);
        }
    }

    fn persist_compare(&mut self, now: Instant) {
        let now_snap = self.session.capture(false);
        let Some(p) = self.persist.as_mut() else {
            return;
        };
        p.last_note = Some(now);
        p.note_pending = false;
        if p.last_structure.as_ref() != Some(&now_snap) {
            p.last_structure = Some(now_snap);
            p.schedule.changed(now);
        }
    }

    pub(crate) fn persist_deadline(&self) -> Option<Instant> {
        let p = self.persist.as_ref()?;
        if p.read_only.is_some() {
            return None;
        }
        let note = p
            .last_note
            .filter(|_| p.note_pending)
            .map(|t| t + NOTE_INTERVAL);
        [p.schedule.due_at(), note, Some(p.next_rescan)]
            .into_iter()
            .flatten()
            .min()
    }

    /// A pane printed something: a change to look for may come with it, so the next look
    /// is at most `RESCAN_INTERVAL` after the last.
    pub(crate) fn persist_activity(&mut self) {
        if let Some(p) = self.persist.as_mut() {
            p.next_rescan = p.next_rescan.min(p.last_rescan + RESCAN_INTERVAL);
        }
    }

    pub(crate) fn persist_tick(&mut self, now: Instant) {
        let Some(p) = self.persist.as_mut() else {
            return;
        };
        if p.read_only.is_some() || self.life.stopping.is_some() {
            return;
        }
        if p.note_pending && p.last_note.is_none_or(|t| now >= t + NOTE_INTERVAL) {
            self.persist_compare(now);
        }
        let Some(p) = self.persist.as_mut() else {
            return;
        };
        if now >= p.next_rescan {
            p.last_rescan = now;
            p.next_rescan = now + RESCAN_IDLE;
            if p.schedule.pending() || p.schedule.in_flight() {
                // Looked at again soon: a save under way may have been taken before the
                // change this look would find.
                p.next_rescan = now + RESCAN_INTERVAL;
            } else {
                // Non-structural changes (cwd, foreground program) are found by looking.
                let full = self.session.capture(true);
                let Some(p) = self.persist.as_mut() else {
                    return;
                };
                if p.last_saved.as_ref() != Some(&full) {
                    p.schedule.changed(now);
                }
            }
        }
        let Some(p) = self.persist.as_mut() else {
            return;
        };
        if p.schedule.is_due(now) {
            let job = self.make_job();
            let Some(p) = self.persist.as_mut() else {
                return;
            };
            p.schedule.start(now);
            if !p.saver.submit(job) {
                p.schedule.finished(false, now);
            }
        }
    }

    /// Builds the next save (structure, and history when enabled).
    fn make_job(&mut self) -> SaveJob {
        let snap = self.session.capture(true);
        let history_on = self.session.config.history;
        let lines = self.session.config.history_lines;
        let history = history_on.then(|| self.capture_history(lines));
        let Some(p) = self.persist.as_mut() else {
            return SaveJob {
                generation: 0,
                session: Vec::new(),
                history: HistoryAction::Delete,
            };
        };
        p.generation += 1;
        p.last_saved = Some(snap.clone());
        let mut snap = snap;
        snap.generation = p.generation;
        snap.saved_at = persist::unix_now();
        let session = serde_json::to_vec_pretty(&snap).unwrap_or_default();
        let history = match history {
            Some(mut h) => {
                h.generation = p.generation;
                HistoryAction::Write(serde_json::to_vec(&h).unwrap_or_default())
            }
            None => HistoryAction::Delete,
        };
        SaveJob {
            generation: p.generation,
            session,
            history,
        }
    }

    fn capture_history(&self, lines: usize) -> HistorySnapshot {
        let mut panes = Vec::new();
        for (_, pane) in self.session.state.all_panes() {
            let Some(ps) = self.session.state.panes.get(&pane) else {
                continue;
            };
            let Some(rt) = self.session.runtimes.get(ps.terminal) else {
                continue;
            };
            let text = lock(&rt.emulator).last_lines(lines, true);
            panes.push(PaneHistory {
                id: ps.no.0,
                lines: text.len(),
                ansi: text.join("\r\n"),
            });
        }
        HistorySnapshot {
            version: SNAPSHOT_VERSION,
            generation: 0,
            panes,
        }
    }

    pub(crate) fn persist_saved(&mut self, report: SaveReport) {
        let now = Instant::now();
        let failed = report.result.as_ref().err().map(ToString::to_string);
        if let Some(p) = self.persist.as_mut() {
            p.schedule.finished(failed.is_none(), now);
            p.last_report = Some(report);
        }
        if let Some(e) = failed {
            log::error!("persistence", "saving the session failed: {e}");
            self.say(format!("could not save the session: {e}"));
        }
    }

    /// The last save, done synchronously on a clean stop.
    pub(crate) fn persist_final(&mut self) {
        if self.persist.as_ref().is_none_or(|p| p.read_only.is_some()) {
            return;
        }
        if self.session.state.workspaces.is_empty() {
            // The session ended because its last pane closed: next time starts fresh.
            if let Some(p) = self.persist.as_mut() {
                p.saver.finish();
                let _ = persist::files::remove_if_exists(&p.paths.session);
                let _ = persist::files::remove_if_exists(&p.paths.history);
            }
            return;
        }
        let job = self.make_job();
        if let Some(p) = self.persist.as_mut() {
            p.saver.finish();
            let report = persist::write(&p.paths, &job);
            if let Err(e) = &report.result {
                log::error!("persistence", "the final save failed: {e}");
            }
        }
    }

    /// At start-up: load what is on disk and rebuild the session. Returns whether a
    /// session was restored (otherwise the caller creates a fresh one).
    pub(crate) fn persist_restore(&mut self) -> bool {
        let Some(p) = self.persist.as_ref() else {
            return false;
        };
        let paths = p.paths().clone();
        match persist::load(&paths) {
            Loaded::Nothing => false,
            Loaded::Newer(v) => {
                let msg = format!(
                    "{} was written by a newer herdr (snapshot version {v}); it is kept as is and this server will not save the session",
                    paths.session.display()
                );
                log::warn!("persistence", "{msg}");
                self.say(msg.clone());
                if let Some(p) = self.persist.as_mut() {
                    p.read_only = Some(msg);
                }
                false
            }
            Loaded::Corrupt { reason, moved_to } => {
                let msg = match &moved_to {
                    Some(to) => format!(
                        "{} was unreadable ({reason}); moved to {} and started empty",
                        paths.session.display(),
                        to.display()
                    ),
                    None => format!(
                        "{} could not be read ({reason}); started empty, and this server will not save over it",
                        paths.session.display()
                    ),
                };
                log::warn!("persistence", "{msg}");
                self.say(msg.clone());
                // Not moved aside: it may be fine (a permission problem, say), so it must
                // not be overwritten.
                if moved_to.is_none() {
                    if let Some(p) = self.persist.as_mut() {
                        p.read_only = Some(msg);
                    }
                }
                false
            }
            Loaded::Snapshot(snap, history) => {
                let started = Instant::now();
                let notes = self.restore(&snap, history.as_ref());
                log::info!(
                    "persistence",
                    "restored {} pane(s) from {} in {} ms",
                    self.session.state.pane_count(),
                    paths.session.display(),
                    started.elapsed().as_millis()
                );
                if let Some(p) = self.persist.as_mut() {
                    p.generation = snap.generation;
                }
                if let Some(first) = notes.first() {
                    let more = if notes.len() > 1 {
                        format!(" (+{} more, see the log)", notes.len() - 1)
                    } else {
                        String::new()
                    };
                    self.say(format!("{first}{more}"));
                }
                for n in &notes {
                    log::warn!("persistence", "{n}");
                }
                !self.session.state.workspaces.is_empty()
            }
        }
    }

    /// Rebuilds workspaces, tabs, layouts and ids; a fresh shell per pane in its folder.
    fn restore(
        &mut self,
        snap: &SessionSnapshot,
        history: Option<&HistorySnapshot>,
    ) -> Vec<String> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let marker = format!(
            "\x1b[0;2m— restored {} —\x1b[0m\r\n",
            persist::format_utc(snap.saved_at)
        );
        let mut claimed = std::collections::HashSet::new();
        let mut failed_once = false;
        let mut make = |server: &mut Server,
                        ps: &PaneSnap,
                        rect: Rect,
                        notes: &mut Vec<String>|
         -> Result<(TerminalState, TerminalRuntime), PaneStartError> {
            let mut cwd = ps.cwd.as_ref().map(PathBuf::from);
            if let Some(c) = &cwd {
                if !c.is_dir() {
                    notes.push(format!(
                        "p{}: {} no longer exists; started in the home folder",
                        ps.id,
                        c.display()
                    ));
                    cwd = home.clone();
                }
            }
            // A machine's pane mirrored here comes back as that: the mirror rebuilds its
            // screen and history.
            if crate::machine::is_view(&ps.argv) {
                if let (Ok(exe), Some(name)) = (crate::paths::own_binary(), ps.argv.get(3)) {
                    let pane = ps.argv.get(4).map(String::as_str);
                    let argv = crate::machine::view_argv(&exe, name, pane);
                    return (server.session)
                        .spawn_terminal_as(ps.id, argv, None, rect, None)
                        .map_err(PaneStartError::Shell);
                }
            }
            // An agent that resumes owns its screen: no history replay under it. The
            // same agent session in two panes is resumed once (the key is claimed
            // before spawning, released if the spawn fails).
            let resume = server
                .resume_plan(ps)
                .filter(|(_, key)| claimed.insert(key.clone()));
            let preface = history
                .filter(|_| resume.is_none())
                .and_then(|h| h.panes.iter().find(|x| x.id == ps.id))
                .filter(|h| h.lines > 0)
                .map(|h| format!("{}\r\n{marker}", h.ansi).into_bytes());
            // Test-only: the first resuming pane's shell cannot be started.
            let spawned = if resume.is_some()
                && crate::server::fault::at("resume-spawn-fails-once")
                && !std::mem::replace(&mut failed_once, true)
            {
                Err(crate::server::panes::PaneError::Thread(
                    std::io::Error::other("injected failure"),
                ))
            } else {
                server.session.spawn_restored(ps.id, cwd, rect, preface)
            };
            match spawned {
                Ok((mut term, rt)) => {
                    term.agent = ps.agent.clone();
                    if let Some((argv, _)) = &resume {
                        let line: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
                        let _ = rt
                            .handle
                            .try_write(format!("{}\r", line.join(" ")).into_bytes());
                        term.agent_session = restore_ref(ps);
                        term.agent_source = ps.agent_source.clone();
                        if let Some(session) = &term.agent_session {
                            server.expect_resume(term.id, session.value());
                        }
                        // Until the resumed agent is detected, its flags are the saved ones.
                        term.agent_argv = argv.clone();
                    } else if let Some(cmd) = ps
                        .command
                        .as_ref()
                        .filter(|c| restorable(c, &server.session.config.restore_commands))
                    {
                        let line: Vec<String> = cmd.iter().map(|w| shell_quote(w)).collect();
                        let _ = rt
                            .handle
                            .try_write(format!("{}\r", line.join(" ")).into_bytes());
                    }
                    Ok((term, rt))
                }
                Err(e) => {
                    if let Some((_, key)) = &resume {
                        claimed.remove(key);
                    }
                    Err(PaneStartError::Shell(e))
                }
            }
        };
        self.rebuild(snap, &mut make)
    }
}

fn restore_ref(ps: &PaneSnap) -> Option<SessionRef> {
    ps.agent_session.as_ref().map(SessionRef::from)
}

impl Server {
    /// The resume command of a saved pane and its dedupe key — only for a session an
    /// official hook reported, only when resuming is on.
    fn resume_plan(&self, ps: &PaneSnap) -> Option<(Vec<String>, (String, String))> {
        if !self.session.config.resume_agents_on_restore {
            return None;
        }
        let agent = ps.agent.as_deref()?;
        let source = ps.agent_source.as_deref()?;
        let session = restore_ref(ps)?.validate().ok()?;
        let argv = crate::agent::plan(source, agent, &session, &ps.agent_flags)?;
        Some((argv, (agent.to_string(), session.value().to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_listed_commands_are_restorable() {
        let allowed = v(&["vim", "less", "npm run dev"]);
        assert!(restorable(&v(&["/usr/bin/vim", "notes.md"]), &allowed));
        assert!(restorable(&v(&["less", "-R", "log"]), &allowed));
        assert!(restorable(
            &v(&["npm", "run", "dev", "--port", "3"]),
            &allowed
        ));
        assert!(restorable(
            &v(&["node", "/usr/bin/npm", "run", "dev"]),
            &allowed
        ));
        assert!(!restorable(&v(&["npm", "run", "build"]), &allowed));
        assert!(!restorable(&v(&["rm", "-rf", "/"]), &allowed));
        assert!(!restorable(&v(&["vimdiff", "a"]), &allowed));
        assert!(!restorable(&v(&[]), &allowed));
        assert!(!restorable(&v(&["vim"]), &[]));
        assert!(
            !restorable(&v(&["sudo", "vim", "x"]), &allowed),
            "only interpreters are skipped"
        );
        assert!(
            !restorable(&v(&["vim", "x\u{15}rm -rf ~ #"]), &allowed),
            "control characters"
        );
    }

    #[test]
    fn shell_quoting_is_safe() {
        assert_eq!(shell_quote("notes.md"), "notes.md");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("=ls"), "'=ls'");
    }
}
