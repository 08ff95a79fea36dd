//! The actor over a socketpair standing in for a PTY master: the far end plays the
//! program.
use super::*;
use crate::pty::LentRead;
use crate::sys;
use crate::term::Emulator;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::Instant;

fn start() -> (PtyHandle, UnixStream, Receiver<PtyEvent>, SharedEmulator) {
    start_sized(24, 80)
}

/// [`start`] with a pane of `rows` x `cols`.
fn start_sized(
    rows: u16,
    cols: u16,
) -> (PtyHandle, UnixStream, Receiver<PtyEvent>, SharedEmulator) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let master = OwnedFd::from(ours);
    sys::set_nonblocking(master.as_fd()).unwrap();
    let emulator = crate::pty::shared(Emulator::new(rows, cols, 100));
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let handle = PtyHandle::start(ActorParts {
        master,
        program: Program::None,
        emulator: emulator.clone(),
        notify: Box::new(move |ev| {
            let _ = tx.lock().unwrap().send(ev);
        }),
        name: "test-actor".into(),
        paused: false,
        preserve: false,
        pending_input: Vec::new(),
    })
    .unwrap();
    (handle, theirs, rx, emulator)
}

const WAIT: Duration = Duration::from_secs(10);

/// `/bin/sh -c script` in a new PTY of 24x80, and its process id.
fn spawn_sh(script: &str) -> (crate::pty::spawn::Spawned, i32) {
    let spec = crate::pty::spawn::SpawnSpec {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        shell: "/bin/sh".into(),
        rows: 24,
        cols: 80,
        ..Default::default()
    };
    let spawned = crate::pty::spawn::spawn(&spec).unwrap();
    let pid = spawned.child.pid();
    (spawned, pid)
}

/// The actor of a program [`spawn_sh`] started.
fn start_spawned(
    spawned: crate::pty::spawn::Spawned,
    name: &str,
    emulator: SharedEmulator,
    notify: Notify,
) -> PtyHandle {
    PtyHandle::start(ActorParts {
        master: spawned.master,
        program: Program::Spawned(spawned.child),
        emulator,
        notify,
        name: name.into(),
        paused: false,
        preserve: false,
        pending_input: Vec::new(),
    })
    .unwrap()
}

#[test]
fn output_reaches_the_emulator_and_is_announced_once_until_taken() {
    let (handle, mut prog, rx, emu) = start();
    prog.write_all(b"hello").unwrap();
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), PtyEvent::Output));
    prog.write_all(b" world").unwrap();
    let deadline = Instant::now() + WAIT;
    while !super::super::lock(&emu)
        .screen()
        .contents()
        .contains("hello world")
    {
        assert!(Instant::now() < deadline, "output never parsed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Not taken yet: no second notification.
    assert!(rx.try_recv().is_err());
    assert!(handle.take_dirty());
    prog.write_all(b"!").unwrap();
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), PtyEvent::Output));
}

#[test]
fn large_input_arrives_intact_and_in_order_across_partial_writes() {
    let (handle, mut prog, _rx, _emu) = start();
    let data: Vec<u8> = (0..4 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let reader = std::thread::spawn(move || {
        let mut got = vec![0u8; 4 * 1024 * 1024];
        prog.read_exact(&mut got).unwrap();
        got
    });
    for chunk in data.chunks(64 * 1024) {
        loop {
            match handle.try_write(chunk.to_vec()) {
                Ok(()) => break,
                Err(WriteError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(reader.join().unwrap() == data);
}

#[test]
fn a_program_that_does_not_read_makes_writes_would_block_not_hang() {
    let (handle, prog, _rx, emu) = start();
    let chunk = vec![b'x'; 64 * 1024];
    let deadline = Instant::now() + WAIT;
    loop {
        match handle.try_write(chunk.clone()) {
            Ok(()) => assert!(Instant::now() < deadline, "queue never filled"),
            Err(WriteError::WouldBlock) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // Output is still read while input is stuck.
    let mut p = prog;
    p.write_all(b"still reading").unwrap();
    let deadline = Instant::now() + WAIT;
    while !super::super::lock(&emu)
        .screen()
        .contents()
        .contains("still reading")
    {
        assert!(
            Instant::now() < deadline,
            "output not read while input is stuck"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(handle);
}

#[test]
fn input_for_a_program_that_does_not_read_is_bounded_in_bytes_and_refused_whole() {
    let (handle, mut prog, _rx, _emu) = start();
    // Writes of 1 MiB, each of its own letter, until one is refused.
    let mut accepted = 0u8;
    while handle.try_write(vec![b'a' + accepted; 1 << 20]).is_ok() {
        accepted += 1;
        assert!(accepted < 20, "4 MiB bound not enforced");
    }
    // At most the bound waits (plus what the socket itself holds, under 1 MiB).
    assert!((4..=5).contains(&accepted), "accepted {accepted} MiB");
    // Smaller writes fill what is left, then are refused too: the bound is in bytes.
    let mut small = 0;
    while handle.try_write(vec![b'!'; 4096]).is_ok() {
        small += 1;
        assert!(
            small <= 256,
            "more than the refused MiB taken in small writes"
        );
    }
    // Everything accepted arrives, whole and in order; nothing of the refused ones.
    let mut want: Vec<u8> = (0..accepted)
        .flat_map(|i| vec![b'a' + i; 1 << 20])
        .collect();
    want.extend(vec![b'!'; small * 4096]);
    let mut got = vec![0u8; want.len()];
    prog.read_exact(&mut got).unwrap();
    assert!(got == want, "input reordered or cut");
    // Once read, the room is given back.
    let deadline = Instant::now() + WAIT;
    while handle.try_write(b"more".to_vec()).is_err() {
        assert!(Instant::now() < deadline, "room never released");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut more = [0u8; 4];
    prog.read_exact(&mut more).unwrap();
    assert_eq!(&more, b"more");
}

#[test]
fn end_of_output_is_reported_as_exit() {
    let (_handle, prog, rx, _emu) = start();
    drop(prog);
    let deadline = Instant::now() + WAIT;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(PtyEvent::Exited(code)) => {
                assert_eq!(code, None);
                break;
            }
            Ok(_) => continue,
            Err(e) => panic!("no exit event: {e}"),
        }
    }
}

#[test]
fn queries_are_answered_into_the_pty() {
    let (_handle, mut prog, _rx, _emu) = start();
    prog.write_all(b"\x1b[6n").unwrap();
    prog.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = [0u8; 16];
    let n = prog.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"\x1b[1;1R");
}

#[test]
fn a_paused_terminal_leaves_output_to_the_next_reader_and_hands_over_its_input() {
    let (handle, mut prog, _rx, emu) = start();
    prog.write_all(b"a").unwrap();
    let deadline = Instant::now() + WAIT;
    while !super::super::lock(&emu).screen().contents().contains('a') {
        assert!(Instant::now() < deadline, "output never parsed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The program does not read: 3 MiB of input cannot all be written.
    let data: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    for chunk in data.chunks(256 * 1024) {
        handle.try_write(chunk.to_vec()).unwrap();
    }
    let paused = handle.pause(WAIT).unwrap();
    // Output from now on is not taken by the actor: the next reader gets it.
    prog.write_all(b"b").unwrap();
    let mut buf = [0u8; 8];
    let mut next = std::fs::File::from(paused.master);
    assert_eq!(std::io::Read::read(&mut next, &mut buf).unwrap(), 1);
    assert_eq!(&buf[..1], b"b");
    // What reached the program plus what was handed over is the input, in order.
    prog.set_nonblocking(true).unwrap();
    let mut written = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while let Ok(n) = prog.read(&mut chunk) {
        if n == 0 {
            break;
        }
        written.extend_from_slice(&chunk[..n]);
    }
    assert!(!paused.pending_input.is_empty());
    written.extend_from_slice(&paused.pending_input);
    assert!(written == data, "{} of {} bytes", written.len(), data.len());
    prog.set_nonblocking(false).unwrap();
    // A paused terminal is not resized (it may be on loan); the size waits for resume.
    handle.resize(30, 100);
    let _again = handle.pause(WAIT).unwrap(); // answered after the resize was seen
    assert_eq!(super::super::lock(&emu).size(), (24, 80));
    handle.resume();
    let deadline = Instant::now() + WAIT;
    while super::super::lock(&emu).size() != (30, 100) {
        assert!(Instant::now() < deadline, "resize not applied on resume");
        std::thread::sleep(Duration::from_millis(5));
    }
    prog.write_all(b"c").unwrap();
    let deadline = Instant::now() + WAIT;
    while !super::super::lock(&emu).screen().contents().contains("ac") {
        assert!(Instant::now() < deadline, "not reading after resume");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_preserved_program_outlives_its_closed_terminal() {
    let _guard = crate::sys::test_fd_lock();
    let (spawned, pid) = spawn_sh("sleep 30");
    // A second holder of the master, as the next server would be.
    let keep = sys::dup_cloexec(spawned.master.as_fd()).unwrap();
    let pidfd = sys::fdpass::pidfd_open(pid).unwrap();
    let emulator = crate::pty::shared(Emulator::new(24, 80, 100));
    let handle = start_spawned(spawned, "test-actor", emulator, Box::new(|_| {}));
    handle.preserve(true);
    handle.shutdown_and_join();
    assert!(
        sys::fdpass::pidfd_alive(pidfd.as_fd()),
        "the program was ended"
    );
    // The other holder owns it now and can end it.
    assert_eq!(sys::fdpass::tty_session(keep.as_fd()).unwrap(), pid);
    sys::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
}

#[test]
fn a_direct_write_never_overtakes_queued_input() {
    let (handle, mut prog, _rx, _emu) = start();
    // A submit holds its Enter back for a moment; a keystroke typed meanwhile must
    // come after it, not go straight in.
    handle
        .try_submit(b"text".to_vec(), b"\r".to_vec(), Duration::from_millis(100))
        .unwrap();
    handle.try_write(b"X".to_vec()).unwrap();
    prog.set_read_timeout(Some(WAIT)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 16];
    while got.len() < 6 {
        let n = prog.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"text\rX");
    // With nothing queued, a write goes straight in (and still arrives).
    handle.try_write(b"Y".to_vec()).unwrap();
    let n = prog.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"Y");
}

#[test]
fn input_sent_after_a_resize_reaches_the_program_after_it() {
    let (handle, mut prog, _rx, emu) = start();
    prog.set_read_timeout(Some(WAIT)).unwrap();
    for i in 0..20u16 {
        handle.resize(24 + i, 80 + i);
        handle.try_write(b"X".to_vec()).unwrap();
        let mut buf = [0u8; 1];
        prog.read_exact(&mut buf).unwrap();
        assert_eq!(
            super::super::lock(&emu).size(),
            (24 + i, 80 + i),
            "input arrived before the size it was sent after"
        );
    }
}

fn wait_screen(emu: &SharedEmulator, text: &str) {
    let deadline = Instant::now() + WAIT;
    while !super::super::lock(emu).screen().contents().contains(text) {
        assert!(
            Instant::now() < deadline,
            "{text:?} never reached the emulator, which shows {:?}",
            super::super::lock(emu).screen().contents()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn lent_reads_go_to_the_borrower_and_come_back_to_the_actor() {
    let (handle, mut prog, rx, emu) = start();
    prog.write_all(b"before ").unwrap();
    wait_screen(&emu, "before");
    let mut lent = handle.lend_reads(WAIT).expect("the actor lends its reads");
    // (The announcement of "before", taken as a renderer would.)
    assert!(matches!(rx.recv_timeout(WAIT).unwrap(), PtyEvent::Output));
    assert!(handle.take_dirty());
    // While lent, the actor leaves the program's output to the borrower, whose read takes
    // it into the emulator and announces it.
    prog.write_all(b"lent ").unwrap();
    let mut events = Vec::new();
    let deadline = Instant::now() + WAIT;
    let n = loop {
        match lent.read(&mut events) {
            LentRead::Took { n, drained } => break (n, drained),
            LentRead::Nothing => {
                assert!(Instant::now() < deadline, "nothing to read while lent");
                std::thread::sleep(Duration::from_millis(5));
            }
            LentRead::Ended => panic!("the terminal ended while lent"),
        }
    };
    assert_eq!(n, (b"lent ".len(), true), "a few bytes are all there was");
    assert!(events.iter().any(|e| matches!(e, PtyEvent::Output)));
    assert!(rx.try_recv().is_err(), "the actor read nothing while lent");
    wait_screen(&emu, "before lent");
    // Given back (dropping the lent reader does): the actor reads again.
    drop(lent);
    prog.write_all(b"after").unwrap();
    wait_screen(&emu, "before lent after");
}

/// A pane so large that a lent read takes fewer bytes than a terminal's drained read:
/// a read that filled its room says there may be more, and the last one that all was read.
#[test]
fn a_large_panes_lent_read_that_filled_its_room_reads_on() {
    let (handle, mut prog, _rx, _emu) = start_sized(300, 400);
    let mut lent = handle.lend_reads(WAIT).expect("the actor lends its reads");
    let out = "x".repeat(2000);
    prog.write_all(out.as_bytes()).unwrap();
    let (mut reads, mut total, mut events) = (Vec::new(), 0, Vec::new());
    let deadline = Instant::now() + WAIT;
    while total < out.len() {
        match lent.read(&mut events) {
            LentRead::Took { n, drained } => {
                total += n;
                reads.push((n, drained));
            }
            LentRead::Nothing => {
                assert!(Instant::now() < deadline, "read {total} of {}", out.len());
                std::thread::sleep(Duration::from_millis(5));
            }
            LentRead::Ended => panic!("the terminal ended while lent"),
        }
    }
    let (last, full) = reads.split_last().unwrap();
    assert!(full.len() >= 3, "{reads:?}");
    assert!(
        full.iter().all(|&(n, drained)| n >= 64 && !drained),
        "{reads:?}"
    );
    assert!(last.0 < full[0].0 && last.1, "{reads:?}");
}

#[test]
fn a_lend_that_is_not_awaited_is_taken_back() {
    let (handle, mut prog, _rx, emu) = start();
    // Given up on at once: whether or not the actor had lent by then, it reads again. (It
    // may have answered in time: then the reads were lent, and go back as a borrower
    // gives them back.)
    drop(handle.lend_reads(Duration::ZERO));
    prog.write_all(b"still read").unwrap();
    wait_screen(&emu, "still read");
}

/// Reads `prog` until the terminal's end (nothing of ours holds it any more).
fn wait_closed(prog: &mut UnixStream) {
    prog.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    let deadline = Instant::now() + WAIT;
    loop {
        match prog.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the terminal never closed");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_closed_terminal_stays_open_only_as_long_as_its_lent_reader() {
    // The actor gone, the lent reader's duplicate still holds the terminal...
    let (handle, mut prog, _rx, _emu) = start();
    let lent = handle.lend_reads(WAIT).expect("the actor lends its reads");
    handle.shutdown_and_join();
    prog.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    assert!(
        matches!(prog.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the lent reader's duplicate keeps the terminal open"
    );
    // ...until it goes.
    drop(lent);
    wait_closed(&mut prog);
    // A handle that lives on does not hold it either: the actor took the direct writes'
    // duplicate away as it ended.
    let (handle, mut prog, _rx, _emu) = start();
    let lent = handle.lend_reads(WAIT).expect("the actor lends its reads");
    handle.shutdown();
    drop(lent);
    wait_closed(&mut prog);
    drop(handle);
}

#[test]
fn a_terminal_nobody_sees_still_reads_everything_and_notices_the_end() {
    let (handle, mut prog, rx, emu) = start();
    handle.set_background(true);
    // Small pieces, each read after the batching delay at the latest.
    for word in ["one ", "two ", "three "] {
        prog.write_all(word.as_bytes()).unwrap();
        wait_screen(&emu, word.trim());
    }
    // Bulk output is never held back: all of it arrives.
    let bulk = "x".repeat(200_000);
    prog.write_all(bulk.as_bytes()).unwrap();
    prog.write_all(b"\r\nend-of-bulk").unwrap();
    wait_screen(&emu, "end-of-bulk");
    // Shown again: read as it comes.
    handle.set_background(false);
    prog.write_all(b" shown").unwrap();
    wait_screen(&emu, "end-of-bulk shown");
    // In the background again, the end is noticed during a delay too.
    handle.set_background(true);
    prog.write_all(b" last").unwrap();
    wait_screen(&emu, "shown last");
    drop(prog);
    let deadline = Instant::now() + WAIT;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(PtyEvent::Exited(_)) => break,
            Ok(_) => continue,
            Err(e) => panic!("no exit event: {e}"),
        }
    }
}

/// Waits until the actor named `name` has a thread, then until it has none (parked).
fn wait_parked(name: &str) {
    for (parked, what) in [(false, "never ran"), (true, "kept its thread")] {
        let deadline = Instant::now() + WAIT;
        while thread_named(name) == parked {
            assert!(Instant::now() < deadline, "the terminal {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether a thread named `name` runs in this process.
fn thread_named(name: &str) -> bool {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

/// An idle terminal's thread ends and the terminal waits in the lot; the program's
/// output, input for it and a resize bring a thread back and are handled as ever, and a
/// parked terminal closes and reaps its program.
#[test]
fn an_idle_terminal_waits_without_a_thread_and_wakes_for_anything() {
    let _guard = crate::sys::test_fd_lock();
    let (spawned, pid) = spawn_sh("while read line; do echo \"got $line $(stty size)\"; done");
    let emulator = crate::pty::shared(Emulator::new(24, 80, 100));
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let name = "parked-actor";
    let notify: Notify = Box::new(move |ev| {
        let _ = tx.lock().unwrap().send(ev);
    });
    let handle = start_spawned(spawned, name, emulator.clone(), notify);
    // Shown terminals keep their thread (see `Actor::parkable`).
    handle.set_background(true);
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + WAIT;
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let shows = |text: &'static str| {
        let emulator = emulator.clone();
        move || {
            crate::pty::lock(&emulator)
                .screen()
                .contents()
                .contains(text)
        }
    };
    wait_parked(name);
    wait_for("the lot never took it in", &|| lot::parked() >= 1);
    // Input written straight to the terminal: the echo and the answer come back.
    handle.try_write(b"one\n".to_vec()).unwrap();
    wait_for("the answer to input never came", &shows("got one 24 80"));
    // (The thread that read the answer ran: gone again means parked again.)
    wait_for("it did not park again", &|| !thread_named(name));
    // A resize is a message: applied by a thread made for it.
    handle.resize(30, 100);
    handle.try_write(b"two\n".to_vec()).unwrap();
    wait_for("the resize and input after it", &shows("got two 30 100"));
    wait_for("it did not park again", &|| !thread_named(name));
    // Shown: a thread again, kept while it waits; hidden: parked again.
    handle.set_background(false);
    wait_for("shown, it got no thread", &|| thread_named(name));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(thread_named(name), "a shown terminal gave up its thread");
    handle.set_background(true);
    wait_for("hidden again, it kept its thread", &|| !thread_named(name));
    // The program ending while its terminal is parked: reaped, and its end reported.
    handle.try_write(b"\x04".to_vec()).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(PtyEvent::Exited(code)) => {
                assert_eq!(code, Some(0));
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("no exit reported: {e}"),
        }
    }
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the program was not reaped"
    );
    handle.shutdown_and_join();
}

/// Closing a terminal that waits in the lot ends its program and returns once it is
/// reaped.
#[test]
fn a_parked_terminal_closes_and_reaps_its_program() {
    let _guard = crate::sys::test_fd_lock();
    let (spawned, pid) = spawn_sh("sleep 30");
    let name = "parked-closed";
    let emulator = crate::pty::shared(Emulator::new(24, 80, 100));
    let handle = start_spawned(spawned, name, emulator, Box::new(|_| {}));
    handle.set_background(true);
    wait_parked(name);
    handle.shutdown_and_join();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the program was not reaped"
    );
}

/// Several terminals wait in the lot; input for one of them wakes that one only, each
/// time, in any order: the others keep waiting without a thread.
#[test]
fn parked_terminals_wake_one_at_a_time() {
    let _guard = crate::sys::test_fd_lock();
    let names = ["lot-a", "lot-b", "lot-c"];
    let terminals: Vec<(PtyHandle, SharedEmulator)> = names
        .iter()
        .map(|name| {
            let (spawned, _) = spawn_sh("while read line; do echo \"got $line\"; done");
            let emulator = crate::pty::shared(Emulator::new(24, 80, 100));
            let handle = start_spawned(spawned, name, emulator.clone(), Box::new(|_| {}));
            handle.set_background(true);
            wait_parked(name);
            (handle, emulator)
        })
        .collect();
    for (round, k) in [1, 0, 2, 1].into_iter().enumerate() {
        let word = format!("w{round}x{k}");
        terminals[k]
            .0
            .try_write(format!("{word}\n").into_bytes())
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while !crate::pty::lock(&terminals[k].1)
            .screen()
            .contents()
            .contains(&format!("got {word}"))
        {
            assert!(
                Instant::now() < deadline,
                "{} never answered {word}",
                names[k]
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        for (other, name) in names.iter().enumerate().filter(|(i, _)| *i != k) {
            assert!(
                !thread_named(name),
                "input for {} gave {name} (#{other}) a thread",
                names[k]
            );
        }
        wait_parked_again(names[k]);
    }
    for (handle, _) in terminals {
        handle.shutdown_and_join();
    }
}

/// Waits until the actor named `name` has no thread (parked again after waking).
fn wait_parked_again(name: &str) {
    let deadline = Instant::now() + WAIT;
    while thread_named(name) {
        assert!(Instant::now() < deadline, "{name} kept its thread");
        std::thread::sleep(Duration::from_millis(10));
    }
}
