//! The classifier's rules one by one, on made-up samples (the recorded corpus checks
//! them on real sessions: `tests/agent_corpus.rs`).

use super::*;

const QUIET: Sample = Sample {
    dt: 250,
    out: 0,
    bells: 0,
    cpu: 0,
    run: 0,
    typed: 0,
};

fn out(bytes: u32) -> Sample {
    Sample {
        out: bytes,
        ..QUIET
    }
}

/// `bytes` written in answer to `typed` bytes of input.
fn typed(typed: u32, bytes: u32) -> Sample {
    Sample {
        typed,
        out: bytes,
        ..QUIET
    }
}

fn cpu(ticks: u32) -> Sample {
    Sample {
        cpu: ticks,
        run: 1,
        ..QUIET
    }
}

fn run(c: &mut Classifier, samples: &[Sample]) -> Vec<Verdict> {
    samples.iter().map(|s| c.push(*s)).collect()
}

const WAITING: Verdict = Verdict::Waiting { notified: false };

/// A spinner's frame, drawn with the little CPU it takes (a quarter of a core at most).
fn frame(bytes: u32) -> Sample {
    Sample {
        cpu: 6,
        ..out(bytes)
    }
}

/// Output drawn with the CPU busy (40 % of a core): an answer streaming.
fn streaming(bytes: u32) -> Sample {
    Sample {
        cpu: 10,
        ..out(bytes)
    }
}

/// No output, no input, and the CPU still at a quarter of a core.
const THINKING: Sample = Sample { cpu: 6, ..QUIET };

#[test]
fn a_spinner_is_work_from_its_second_frame() {
    let mut c = Classifier::default();
    let v = run(&mut c, &[frame(80), frame(80), frame(80)]);
    assert_eq!(v, [WAITING, Verdict::Working, Verdict::Working]);
}

#[test]
fn output_that_stops_without_the_cpu_dropping_ends_half_a_second_after_the_last_frame() {
    // The CPU still busy, or never busy (a spinner skipping a frame while its agent
    // waits for a slow answer): a frame may come yet.
    for gap in [THINKING, QUIET] {
        let mut c = Classifier::default();
        let v = run(
            &mut c,
            &[frame(80), frame(80), gap, frame(80), frame(80), gap, gap],
        );
        assert_eq!(
            v,
            [
                WAITING,
                Verdict::Working,
                Verdict::Working,
                Verdict::Working,
                Verdict::Working,
                Verdict::Working,
                WAITING
            ],
            "{gap:?}"
        );
    }
}

#[test]
fn output_and_cpu_that_stop_together_end_the_work_at_once() {
    let resting = Sample { cpu: 2, ..QUIET };
    for rest in [QUIET, resting] {
        let mut c = Classifier::default();
        let v = run(
            &mut c,
            &[streaming(300), streaming(300), streaming(400), rest, rest],
        );
        assert_eq!(
            v,
            [
                WAITING,
                Verdict::Working,
                Verdict::Working,
                WAITING,
                WAITING
            ],
            "{rest:?}"
        );
    }
    // The CPU not at rest yet is no drop...
    let mut c = Classifier::default();
    assert_eq!(
        run(&mut c, &[streaming(300), streaming(300), THINKING]),
        [WAITING, Verdict::Working, Verdict::Working]
    );
    // ...and typing while it works is no sign the work is over.
    let mut c = Classifier::default();
    let typing = Sample {
        cpu: 0,
        ..typed(1, 0)
    };
    assert_eq!(
        run(&mut c, &[streaming(300), streaming(300), typing]),
        [WAITING, Verdict::Working, Verdict::Working]
    );
}

#[test]
fn a_final_screen_after_steady_frames_then_nothing_running_ends_the_work_at_once() {
    // Codex: its frames drawn with no CPU in the pane's session (the work runs in its
    // shared server), the answer put into its history as its working line goes, then
    // nothing at all.
    let mut c = Classifier::default();
    let v = run(
        &mut c,
        &[out(120), out(130), out(120), out(2400), QUIET, QUIET],
    );
    assert_eq!(
        v,
        [
            WAITING,
            Verdict::Working,
            Verdict::Working,
            Verdict::Working,
            WAITING,
            WAITING
        ]
    );
    // Anything still running in the session, or a last frame no bigger than an
    // animation's (a spinner skipping a frame), or frames that were not steady: the
    // half second decides, as before.
    let ticking = Sample { cpu: 1, ..QUIET };
    for samples in [
        [out(120), out(130), out(120), out(2400), ticking],
        [out(120), out(130), out(120), out(200), QUIET],
        [out(120), QUIET, out(120), out(2400), QUIET],
    ] {
        let mut c = Classifier::default();
        assert_eq!(
            run(&mut c, &samples).last(),
            Some(&Verdict::Working),
            "{samples:?}"
        );
    }
}

#[test]
fn one_redraw_is_not_work() {
    let mut c = Classifier::default();
    let v = run(&mut c, &[out(4000), QUIET, QUIET, QUIET, QUIET, out(10)]);
    assert!(v.iter().all(|v| *v == WAITING), "{v:?}");
}

#[test]
fn cpu_without_output_is_work_and_a_few_ticks_are_not() {
    let mut c = Classifier::default();
    let v = run(&mut c, &[cpu(25), cpu(25)]);
    assert_eq!(v, [WAITING, Verdict::Working]);
    let mut c = Classifier::default();
    let v = run(&mut c, &[cpu(2), cpu(3), cpu(1), cpu(2), cpu(2), cpu(3)]);
    assert!(v.iter().all(|v| *v == WAITING), "{v:?}");
}

#[test]
fn a_bell_ends_work_at_once_and_is_remembered_until_work_starts_again() {
    let mut c = Classifier::default();
    let bell = Sample {
        bells: 1,
        out: 20,
        ..QUIET
    };
    let v = run(
        &mut c,
        &[out(80), out(80), bell, QUIET, QUIET, out(9), out(9)],
    );
    let notified = Verdict::Waiting { notified: true };
    assert_eq!(
        v,
        [
            WAITING,
            Verdict::Working,
            notified,
            notified,
            notified,
            notified,
            Verdict::Working
        ]
    );
    assert_eq!(c.push(QUIET), Verdict::Working);
}

#[test]
fn a_bell_while_a_build_burns_cpu_is_still_work() {
    let mut c = Classifier::default();
    let bell = Sample {
        bells: 1,
        ..cpu(25)
    };
    assert_eq!(run(&mut c, &[cpu(25), bell]), [WAITING, Verdict::Working]);
}

#[test]
fn the_window_stays_bounded() {
    let mut c = Classifier::default();
    for _ in 0..1000 {
        c.push(out(1));
    }
    assert_eq!(c.window.len(), WINDOW);
}

#[test]
fn samples_count_what_happened_between_readings() {
    let p = |pid, state, ticks| Proc { pid, state, ticks };
    let mut s = Sampler::default();
    let first = Reading {
        at_ms: 1000,
        written: 50,
        bells: 1,
        procs: vec![p(10, b'S', 7), p(11, b'R', 100)],
        typed: 0,
    };
    assert_eq!(s.sample(&first), None, "the first reading is only a base");
    let second = Reading {
        at_ms: 1250,
        written: 80,
        bells: 2,
        // 11 used 3 more ticks and exited: 10 reaped it (its 103 ticks became 10's
        // children's time; 10 used 2 itself); 12 is new.
        procs: vec![p(10, b'S', 7 + 2 + 103), p(12, b'D', 4)],
        typed: 3,
    };
    let want = Sample {
        dt: 250,
        out: 30,
        bells: 1,
        cpu: 2 + 3 + 4,
        run: 1,
        typed: 3,
    };
    assert_eq!(s.sample(&second), Some(want));
}

#[test]
fn the_echo_of_typing_is_not_work_and_the_answer_to_it_is() {
    let typing = typed(1, 40);
    let mut c = Classifier::default();
    let v = run(&mut c, &[typing, typing, typing, typing, out(30), QUIET]);
    assert!(v.iter().all(|v| *v == WAITING), "{v:?}");
    // Enter, then the agent's spinner.
    let v = run(&mut c, &[typing, out(30), out(200), out(200)]);
    assert_eq!(v, [WAITING, WAITING, WAITING, Verdict::Working]);
}

#[test]
fn a_new_screen_drawn_in_answer_to_one_key_is_work_at_once() {
    let enter = typed(1, 1400);
    let mut c = Classifier::default();
    assert_eq!(
        run(&mut c, &[enter, frame(130)]),
        [Verdict::Working, Verdict::Working]
    );
    // Typing is no single key, whatever it draws; a small answer to a key is an echo.
    let mut c = Classifier::default();
    let (typing, key) = (typed(12, 1400), typed(1, 120));
    assert_eq!(
        run(&mut c, &[typing, out(130), key, out(130)]),
        [WAITING; 4]
    );
}

#[test]
fn more_than_an_echo_right_after_one_key_is_work_at_once() {
    // Enter, with nothing drawn yet; then the agent's first frame of work.
    let mut c = Classifier::default();
    let v = run(&mut c, &[typed(1, 0), frame(ECHO_BYTES + 1), frame(100)]);
    assert_eq!(v, [WAITING, Verdict::Working, Verdict::Working]);
    // The echo of the key, however late, is not; nor output after typing more than a key
    // (a paste, a line sent at once) or while the typing goes on.
    let mut c = Classifier::default();
    let v = run(
        &mut c,
        &[
            typed(1, 0),
            out(ECHO_BYTES),
            QUIET,
            typed(20, 0),
            out(ECHO_BYTES + 1),
            QUIET,
            typed(1, 0),
            typed(1, ECHO_BYTES + 1),
        ],
    );
    assert!(v.iter().all(|v| *v == WAITING), "{v:?}");
}

#[test]
fn the_answer_to_a_key_that_stops_at_once_is_over_at_once() {
    // Esc at a permission prompt: the prompt is taken away, and the agent waits again,
    // its CPU still busy with the redraw. One frame is no animation to wait for.
    let mut c = Classifier::default();
    let v = run(&mut c, &[typed(1, 0), frame(1200), THINKING]);
    assert_eq!(v, [WAITING, Verdict::Working, WAITING]);
}
