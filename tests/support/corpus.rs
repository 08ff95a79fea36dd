//! The labelled corpus of the any-agent classifier (`herdr::agent::activity`): recording
//! it from real sessions, and reading it back.
//!
//! A recording samples pane p1 every `EVERY` through the API (`pane.signals`: the totals
//! the server's sampler reads; `pane.read`: the screen, for the label) and keeps, for each
//! sample, what the classifier sees and the truth. Format, one JSON value a line: a
//! scenario starts with `{"scenario": "agent/name"}`; each sample is
//! `[dt, out, bells, cpu, run, typed, "working"|"waiting"]` (the fields of
//! `activity::Sample`). The classifier runs over a whole file, across its scenarios, as
//! the server runs it over a pane's life.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use herdr::agent::activity::{Proc, Reading, Sample, Sampler};
use serde_json::{json, Value};

use super::api::Api;
use super::Env;

/// How often the recorder samples: as the server does while a pane works.
pub const EVERY: Duration = Duration::from_millis(250);

/// Where the corpus lives.
pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/agent-corpus")
}

/// What the truth is, for the samples of the current scenario.
#[derive(Clone)]
pub enum Truth {
    Working,
    Waiting,
    /// Told by looking at the pane's screen (an agent's own working line, its prompts)
    /// and the mock API (an answer is being streamed).
    Judged(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

/// Samples a pane in the background until dropped or `finish`ed.
pub struct Recorder {
    phase: Arc<Mutex<(String, Truth)>>,
    lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The totals `pane.signals` gave, as a reading.
fn reading(v: &Value, at: Instant, epoch: Instant) -> Reading {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let procs = (v["procs"].as_array().into_iter().flatten())
        .map(|p| Proc {
            pid: p[0].as_i64().unwrap_or(0) as i32,
            state: p[1].as_str().and_then(|s| s.bytes().next()).unwrap_or(b'?'),
            ticks: p[2].as_u64().unwrap_or(0),
        })
        .collect();
    Reading {
        at_ms: at.duration_since(epoch).as_millis() as u64,
        written: n("written"),
        bells: n("bells"),
        typed: n("typed"),
        procs,
    }
}

impl Recorder {
    pub fn start(env: &Env, scenario: &str, truth: Truth) -> Recorder {
        let phase = Arc::new(Mutex::new((scenario.to_string(), truth)));
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut api = Api::connect(env);
        let (p, l, s) = (phase.clone(), lines.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let epoch = Instant::now();
            let mut sampler = Sampler::default();
            let mut current = String::new();
            let mut next = Instant::now();
            while !s.load(Ordering::Acquire) {
                let at = Instant::now();
                let signals = api.call("pane.signals", json!({"pane": "p1"}));
                let screen = api.call("pane.read", json!({"pane": "p1"}));
                let (name, truth) = p.lock().unwrap().clone();
                let working = match truth {
                    Truth::Working => true,
                    Truth::Waiting => false,
                    Truth::Judged(f) => f(screen["text"].as_str().unwrap_or("")),
                };
                if let Some(sample) = sampler.sample(&reading(&signals, at, epoch)) {
                    let mut out = l.lock().unwrap();
                    if name != current {
                        out.push(json!({"scenario": name}).to_string());
                        current = name;
                    }
                    out.push(line(&sample, working));
                }
                next += EVERY;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
        });
        Recorder {
            phase,
            lines,
            stop,
            thread: Some(thread),
        }
    }

    /// The samples from now on belong to `scenario`, and `truth` labels them.
    pub fn phase(&self, scenario: &str, truth: Truth) {
        *self.phase.lock().unwrap() = (scenario.to_string(), truth);
    }

    /// Stops sampling; the recorded lines.
    pub fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.join().expect("the recorder thread");
        }
        std::mem::take(&mut *self.lines.lock().unwrap())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn line(s: &Sample, working: bool) -> String {
    let label = if working { "working" } else { "waiting" };
    json!([s.dt, s.out, s.bells, s.cpu, s.run, s.typed, label]).to_string()
}

/// One scenario of a corpus file: its name and its samples with their truth (working?).
pub struct Scenario {
    pub name: String,
    pub samples: Vec<(Sample, bool)>,
}

/// Reads a corpus file.
pub fn parse(text: &str) -> Vec<Scenario> {
    let mut out: Vec<Scenario> = Vec::new();
    for (no, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", no + 1));
        if let Some(name) = v["scenario"].as_str() {
            out.push(Scenario {
                name: name.to_string(),
                samples: Vec::new(),
            });
            continue;
        }
        let n = |i: usize| {
            v[i].as_u64()
                .unwrap_or_else(|| panic!("line {}: {v}", no + 1)) as u32
        };
        let sample = Sample {
            dt: n(0),
            out: n(1),
            bells: n(2),
            cpu: n(3),
            run: n(4),
            typed: n(5),
        };
        let working = v[6] == "working";
        out.last_mut()
            .unwrap_or_else(|| panic!("line {}: a sample before any scenario", no + 1))
            .samples
            .push((sample, working));
    }
    out
}
