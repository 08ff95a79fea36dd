//! `pane.wait`: waits kept on the server until their condition holds, their deadline
//! passes or their pane closes.
//!
//! Invariants: the number of pending waits is bounded (per connection and in all), and
//! re-checking never costs the server thread O(all waits) per event: output re-checks only
//! the waits on the terminal that printed, formats that terminal's lines once for all of
//! them, and searches a regex that cannot match across lines only in the lines that changed
//! since the last check; a passed deadline looks only at the waits that expired.

use std::cell::Cell;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use regex_syntax::hir::{Class, Hir, HirKind, Look};
use serde_json::{json, Value};

use super::{now, ApiError, ApiResult, Outcome};
use crate::model::ids::TerminalId;
use crate::protocol::api::PaneWait;
use crate::pty::lock;
use crate::server::{ClientId, Server};

/// Lines (history + screen) an output wait searches.
const WAIT_LINES: usize = 1000;
/// Pending waits one connection may hold (each is re-checked on its pane's output).
const MAX_WAITS_PER_CONNECTION: usize = 256;
/// Pending waits across all connections: beyond it a script's waits are refused, so no
/// number of connections can make every output event expensive.
pub(crate) const MAX_WAITS: usize = 1024;
/// How far above the first changed line a re-check looks for the start of a match that may
/// span lines: searching all 1000 lines for each such wait on every change cost the server
/// thread 360 ms per output event with 1024 of them (debug build), 18 ms with this.
const SPAN_LINES: usize = 50;
/// Upper bound of a wait's timeout.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

pub(crate) enum WaitKind {
    Output(OutputWait),
    Exit,
    AgentState(String),
}

pub(crate) struct OutputWait {
    re: regex_lite::Regex,
    /// The pattern may match a line break (or looks at the start of the text), so a new
    /// match may begin in lines that did not change: a re-check looks [`SPAN_LINES`] above.
    spans: bool,
    /// Not yet re-checked: the lines it was first searched in may differ from those the
    /// terminal's other waits were last checked against, so its first re-check searches
    /// everything.
    fresh: Cell<bool>,
}

pub(crate) struct PendingWait {
    pub conn: ClientId,
    /// The request's id, echoed in the reply.
    pub id: Value,
    pub terminal: TerminalId,
    pub kind: WaitKind,
    pub deadline: Option<Instant>,
}

/// A terminal's last lines as output waits search them, with where they start to differ
/// from what the waits on it were last checked against.
struct Lines {
    text: String,
    /// Byte offset in `text` of each line.
    starts: Vec<usize>,
    /// The first line that changed since the last check (0: all are new).
    changed: usize,
}

impl Lines {
    fn new(lines: Vec<String>, before: Option<&[u64]>) -> (Lines, Vec<u64>) {
        let hashes: Vec<u64> = lines.iter().map(|l| hash_line(l)).collect();
        let same = before.map_or(0, |b| unchanged_prefix(b, &hashes));
        let mut starts = Vec::with_capacity(lines.len());
        let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            starts.push(text.len());
            text.push_str(line);
        }
        (
            Lines {
                text,
                starts,
                changed: same,
            },
            hashes,
        )
    }

    /// Searches for `w`'s regex in what changed (a match that was there at the last check
    /// would have answered the wait then), or in everything (`all`). `find_at` keeps the
    /// text before `from` as context, so `^` and `\b` see the same line boundaries as a
    /// search of everything.
    /// The match and its whole line.
    fn find(&self, w: &OutputWait, all: bool) -> Option<(&str, &str)> {
        let from = match (all, w.spans) {
            (true, _) => 0,
            // Nothing changed: nothing new can match.
            (false, _) if self.changed >= self.starts.len() => return None,
            (false, true) => self.starts[self.changed.saturating_sub(SPAN_LINES)],
            (false, false) => self.starts[self.changed],
        };
        let m = w.re.find_at(&self.text, from)?;
        let line = self.starts.partition_point(|&s| s <= m.start()).max(1) - 1;
        // No lines at all (a blank pane): a pattern that matches nothing matches there.
        let start = self.starts.get(line).copied().unwrap_or(0);
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |e| start + e);
        Some((m.as_str(), &self.text[start..end]))
    }
}

fn hash_line(line: &str) -> u64 {
    let mut h = DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

/// How many of `now`'s first lines appear, in order, somewhere in `before`: output scrolls
/// the window of lines up and changes its end, so the lines that kept their text are a
/// run of the old ones. (Any run is a sound answer; the longest saves the most searching.)
fn unchanged_prefix(before: &[u64], now: &[u64]) -> usize {
    let Some(first) = now.first() else {
        return 0;
    };
    let mut best = 0;
    for k in 0..before.len() {
        if before[k] != *first {
            continue;
        }
        let run = before[k..]
            .iter()
            .zip(now)
            .take_while(|(a, b)| a == b)
            .count();
        best = best.max(run);
        if k + run == before.len() {
            // The rest of the old lines all match: no later start can give a longer run.
            break;
        }
    }
    best
}

/// Whether a match of `pattern` may contain a line break or depend on the start of the
/// text (then it may begin above the lines that changed). A pattern this parser does not
/// understand is taken to.
fn may_span_lines(pattern: &str) -> bool {
    match regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .build()
        .parse(pattern)
    {
        Ok(hir) => spans(&hir),
        Err(_) => true,
    }
}

fn spans(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Empty => false,
        HirKind::Look(look) => matches!(look, Look::Start),
        HirKind::Literal(lit) => lit.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= '\n' && '\n' <= r.end()),
        HirKind::Class(Class::Bytes(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
        HirKind::Repetition(r) => spans(&r.sub),
        HirKind::Capture(c) => spans(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(spans),
    }
}

impl Server {
    pub(crate) fn pane_wait(&mut self, conn: ClientId, id: &Value, p: PaneWait) -> ApiResult {
        let tid = self.target_terminal(p.pane)?;
        let output = p.output.as_deref();
        let exit = p.exit;
        let agent = p.agent_state.as_deref();
        let kind = match (output, exit, agent) {
            // ^ and $ anchor at line boundaries: people think of output as lines.
            (Some(re), false, None) => WaitKind::Output(OutputWait {
                re: regex_lite::RegexBuilder::new(re)
                    .multi_line(true)
                    .build()
                    .map_err(|e| {
                        ApiError::params(format!("\"output\" is not a valid regex: {e}"))
                    })?,
                spans: may_span_lines(re),
                fresh: Cell::new(true),
            }),
            (None, true, None) => WaitKind::Exit,
            (None, false, Some(state)) if super::agents::STATES.contains(&state) => {
                WaitKind::AgentState(state.to_string())
            }
            (None, false, Some(state)) => {
                return Err(ApiError::params(format!(
                    "\"agent_state\" must be one of {}, got {state:?}",
                    super::agents::STATES.join(", ")
                )))
            }
            _ => {
                return Err(ApiError::params(
                    "give exactly one of \"output\" (a regex), \"exit\": true, \"agent_state\"",
                ))
            }
        };
        let deadline = p
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms).min(MAX_WAIT));
        let wait = PendingWait {
            conn,
            id: id.clone(),
            terminal: tid,
            kind,
            deadline,
        };
        // Already true? Answer at once.
        if let Some(result) = self.check_wait(&wait, None) {
            return now(result);
        }
        if self.api.waits.iter().filter(|w| w.conn == conn).count() >= MAX_WAITS_PER_CONNECTION {
            return Err(ApiError::new(
                "too_many_waits",
                format!(
                    "this connection already has {MAX_WAITS_PER_CONNECTION} waits pending (the \
                     limit per connection); let some finish, or give them a timeout_ms"
                ),
            ));
        }
        if self.api.waits.len() >= MAX_WAITS {
            // Peers that left without waiting for their answers give their waits back.
            self.api.forget_gone();
        }
        if self.api.waits.len() >= MAX_WAITS {
            return Err(ApiError::new(
                "too_many_waits",
                format!(
                    "the server already has {MAX_WAITS} waits pending across all connections \
                     (the limit); let some finish, or give them a timeout_ms, then retry"
                ),
            ));
        }
        self.api.waits.push(wait);
        Ok(Outcome::Later)
    }

    /// A terminal's last lines for output waits, compared with those of its last check.
    fn wait_lines(&mut self, tid: TerminalId) -> Option<Lines> {
        let rt = self.session.runtimes.get(tid)?;
        let lines = lock(&rt.emulator).last_lines(WAIT_LINES, false);
        let before = self.api.wait_lines.get(&tid).map(Vec::as_slice);
        let (lines, hashes) = Lines::new(lines, before);
        self.api.wait_lines.insert(tid, hashes);
        Some(lines)
    }

    /// The reply of a satisfied wait, or None while it must keep waiting. `lines`: the
    /// terminal's lines when already formatted (else the wait searches all of them).
    fn check_wait(&self, w: &PendingWait, lines: Option<&Lines>) -> Option<Value> {
        let pane = self
            .session
            .state
            .pane_of_terminal(w.terminal)
            .map(|p| self.pane_no(p));
        match &w.kind {
            WaitKind::Output(ow) => {
                let own;
                let (l, all) = match lines {
                    Some(l) => (l, ow.fresh.replace(false)),
                    None => {
                        let rt = self.session.runtimes.get(w.terminal)?;
                        let text = lock(&rt.emulator).last_lines(WAIT_LINES, false);
                        own = Lines::new(text, None).0;
                        (&own, true)
                    }
                };
                let (matched, line) = l.find(ow, all)?;
                Some(json!({ "id": pane, "matched": matched, "line": line }))
            }
            WaitKind::Exit => {
                let term = self.session.state.terminals.get(&w.terminal);
                match term.and_then(|t| t.exited) {
                    Some(code) => Some(json!({ "id": pane, "exited": true, "status": code })),
                    None if term.is_none() => {
                        Some(json!({ "id": pane, "exited": true, "status": Value::Null }))
                    }
                    None => None,
                }
            }
            WaitKind::AgentState(want) => {
                let state = self
                    .session
                    .state
                    .agent_state(self.session.state.pane_of_terminal(w.terminal)?)?;
                (state == want).then(|| json!({ "id": pane, "agent_state": state }))
            }
        }
    }

    /// Re-checks the waits on one terminal (after output, exit or a state change); with
    /// None, answers the waits whose deadline has passed.
    pub(crate) fn recheck_waits(&mut self, tid: Option<TerminalId>) {
        let now_t = Instant::now();
        let concerned = |w: &PendingWait| match tid {
            Some(t) => w.terminal == t,
            None => w.deadline.is_some_and(|d| d <= now_t),
        };
        if !self.api.waits.iter().any(concerned) {
            return;
        }
        let lines = match tid {
            Some(t)
                if self
                    .api
                    .waits
                    .iter()
                    .any(|w| w.terminal == t && matches!(w.kind, WaitKind::Output(_))) =>
            {
                self.wait_lines(t)
            }
            _ => None,
        };
        let mut done = Vec::new();
        let mut i = 0;
        while i < self.api.waits.len() {
            let w = &self.api.waits[i];
            if !concerned(w) {
                i += 1;
                continue;
            }
            let result = match self.check_wait(w, lines.as_ref()) {
                Some(v) => Some(Ok(v)),
                None if w.deadline.is_some_and(|d| d <= now_t) => Some(Err(ApiError::new(
                    "timeout",
                    "the condition did not happen before the timeout",
                ))),
                None if !self.session.state.terminals.contains_key(&w.terminal)
                    && !matches!(w.kind, WaitKind::Exit) =>
                {
                    Some(Err(ApiError::new(
                        "pane_exited",
                        "the pane closed before the condition happened",
                    )))
                }
                None => None,
            };
            match result {
                Some(r) => {
                    let w = self.api.waits.remove(i);
                    done.push((w.conn, w.id, r));
                }
                None => i += 1,
            }
        }
        let answered = !done.is_empty();
        for (conn, id, result) in done {
            self.api.reply(conn, &id, result);
        }
        if answered {
            self.api.reap_drained();
        }
        // Lines are remembered only for terminals that still have output waits.
        let waits = &self.api.waits;
        self.api.wait_lines.retain(|t, _| {
            waits
                .iter()
                .any(|w| w.terminal == *t && matches!(w.kind, WaitKind::Output(_)))
        });
    }

    pub(crate) fn next_wait_deadline(&self) -> Option<Instant> {
        self.api.waits.iter().filter_map(|w| w.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    fn wait(pattern: &str) -> OutputWait {
        OutputWait {
            re: regex_lite::RegexBuilder::new(pattern)
                .multi_line(true)
                .build()
                .unwrap(),
            spans: may_span_lines(pattern),
            fresh: Cell::new(false),
        }
    }

    #[test]
    fn patterns_that_can_cross_a_line_are_told_apart() {
        for p in ["^42$", "foo.*bar", r"\bdone\b", "[a-z]+ [0-9]", "(?i)error"] {
            assert!(!may_span_lines(p), "{p}");
        }
        for p in [
            r"a\nb",
            r"a\sb",
            "[^x]+",
            r"\Afoo",
            "(?s)a.b",
            "[\\x00-z]",
            "(",
        ] {
            assert!(may_span_lines(p), "{p}");
        }
    }

    #[test]
    fn a_scrolled_window_keeps_its_unchanged_lines() {
        let h = |t: &[&str]| t.iter().map(|l| hash_line(l)).collect::<Vec<_>>();
        // Scrolled by two lines, the last one rewritten.
        let before = h(&["a", "b", "c", "d", "$ "]);
        let now = h(&["c", "d", "e", "f", "$ x"]);
        assert_eq!(unchanged_prefix(&before, &now), 2);
        // Repeated lines: the longest run wins.
        let before = h(&["y", "y", "n", "y", "y", "y"]);
        let now = h(&["y", "y", "y", "z"]);
        assert_eq!(unchanged_prefix(&before, &now), 3);
        assert_eq!(unchanged_prefix(&[], &now), 0);
    }

    #[test]
    fn only_changed_lines_are_searched_unless_the_pattern_spans_lines() {
        let before = lines(&["old 42", "keep", "$ "]);
        let (_, hashes) = Lines::new(before, None);
        let (l, _) = Lines::new(lines(&["old 42", "keep", "$ echo", "new"]), Some(&hashes));
        // "old 42" was there at the last check and did not match then: it cannot now.
        assert!(l.find(&wait("42"), false).is_none());
        assert_eq!(l.find(&wait("^new$"), false).unwrap().1, "new");
        assert_eq!(l.find(&wait("echo"), false).unwrap().1, "$ echo");
        // A pattern across lines may start in an unchanged line (not too far up).
        assert_eq!(l.find(&wait(r"keep\n\$"), false).unwrap().1, "keep");
        let mut many = vec!["start".to_string()];
        many.extend((0..SPAN_LINES).map(|i| format!("filler {i}")));
        let (_, hashes) = Lines::new(many.clone(), None);
        many.push("end".into());
        let (l, _) = Lines::new(many, Some(&hashes));
        assert!(l.find(&wait(r"(?s)start.*end"), false).is_none());
        assert!(l.find(&wait(r"(?s)filler 1.*end"), false).is_some());
        // Nothing changed: nothing to find.
        let (_, hashes) = Lines::new(lines(&["a 42"]), None);
        assert!(Lines::new(lines(&["a 42"]), Some(&hashes))
            .0
            .find(&wait("42"), false)
            .is_none());
        // A fresh wait searches everything.
        let (_, hashes) = Lines::new(lines(&["old 42", "keep"]), None);
        let (l, _) = Lines::new(lines(&["old 42", "keep"]), Some(&hashes));
        assert!(l.find(&wait("42"), false).is_none());
        assert_eq!(l.find(&wait("42"), true).unwrap().1, "old 42");
    }
}
