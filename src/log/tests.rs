use super::file::{numbered, Rotating};
use super::*;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};

fn at(local: Option<LocalTime>, part: &str, message: &str) -> String {
    let line = Line::at(local, 6, Level::Warn, &part, format_args!("{message}"));
    String::from_utf8(line.bytes().to_vec()).unwrap()
}

fn time(utc_offset: i64) -> Option<LocalTime> {
    Some(LocalTime {
        year: 2025,
        month: 1,
        day: 2,
        hour: 3,
        minute: 4,
        second: 5,
        utc_offset,
    })
}

#[test]
fn a_line_has_the_local_time_its_offset_the_level_and_the_part() {
    assert_eq!(
        at(time(5 * 3600 + 1800), "persistence", "saving failed: x"),
        "2025-01-02 03:04:05.006 +0530 WARN persistence: saving failed: x\n"
    );
    assert_eq!(
        at(time(-(3 * 3600 + 1800)), "server", "m"),
        "2025-01-02 03:04:05.006 -0330 WARN server: m\n"
    );
    assert_eq!(
        at(time(0), "client 3", "closing"),
        "2025-01-02 03:04:05.006 +0000 WARN client 3: closing\n"
    );
    assert!(at(None, "server", "m").ends_with(" WARN server: m\n"));
    // Now, by the C library.
    let now = Line::record(
        SystemTime::now(),
        Level::Info,
        &"server",
        format_args!("up"),
    );
    let now = String::from_utf8(now.bytes().to_vec()).unwrap();
    let b = now.as_bytes();
    assert!(
        b[4] == b'-' && b[10] == b' ' && b[19] == b'.' && b[23] == b' ',
        "{now}"
    );
    assert!(matches!(b[24], b'+' | b'-'), "{now}");
    assert!(now[30..].starts_with("INFO server: up\n"), "{now}");
}

#[test]
fn a_record_stays_one_line_of_bounded_length() {
    assert_eq!(
        at(time(0), "config", "a\nb\r\x1b[31mc\td\u{9b}"),
        "2025-01-02 03:04:05.006 +0000 WARN config: a\\nb\\r\\x1b[31mc\td\\x9b\n"
    );
    let long = "é".repeat(10_000);
    let line = at(time(0), "server", &long);
    assert!(line.len() <= MAX_LINE, "{}", line.len());
    assert!(
        line.len() > MAX_LINE - 8,
        "cut near the bound: {}",
        line.len()
    );
    assert!(line.ends_with("é…\n"), "cut on a character's boundary");
    assert_eq!(line.matches('\n').count(), 1);
}

#[test]
fn levels_parse_in_any_case_and_order_by_severity() {
    assert_eq!(Level::parse("debug"), Some(Level::Debug));
    assert_eq!(Level::parse(" WARN "), Some(Level::Warn));
    assert_eq!(Level::parse("Error"), Some(Level::Error));
    assert_eq!(Level::parse("verbose"), None);
    assert!(Level::Error < Level::Warn && Level::Warn < Level::Info);
    assert!(Level::Info < Level::Debug);
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// `server.log` in a fresh private folder, opened for appending as a server's stderr is.
fn log_file(dir: &Path) -> (std::path::PathBuf, OwnedFd) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = dir.join("server.log");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    (path, f.into())
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn a_log_past_its_bound_moves_up_and_a_new_private_one_takes_its_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let (path, fd) = log_file(dir.path());
    let number = fd.as_raw_fd();
    let mut log = Rotating::fd(fd, &path, 100, 3);
    // 30 bytes a line: the fourth passes 100.
    let line = |i: usize| format!("line {i:03} .................\n");
    for i in 0..4 {
        log.write(line(i).as_bytes()).unwrap();
    }
    assert_eq!(
        read(&numbered(&path, 1)),
        (0..4).map(line).collect::<String>()
    );
    assert_eq!(read(&path), "", "a new one");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&numbered(&path, 1)), 0o600);
    // Written through the same descriptor number, now the new file.
    log.write(line(4).as_bytes()).unwrap();
    assert_eq!(read(&path), line(4));
    let behind = std::fs::metadata(format!("/proc/self/fd/{number}")).unwrap();
    assert_eq!(behind.ino(), std::fs::metadata(&path).unwrap().ino());
    // Three kept, the oldest dropped.
    for i in 5..18 {
        log.write(line(i).as_bytes()).unwrap();
    }
    assert_eq!(
        read(&numbered(&path, 3)),
        (4..8).map(line).collect::<String>()
    );
    assert_eq!(
        read(&numbered(&path, 2)),
        (8..12).map(line).collect::<String>()
    );
    assert_eq!(
        read(&numbered(&path, 1)),
        (12..16).map(line).collect::<String>()
    );
    assert_eq!(read(&path), (16..18).map(line).collect::<String>());
    assert!(!numbered(&path, 4).exists());
    for n in 1..=3 {
        assert_eq!(mode(&numbered(&path, n)), 0o600);
    }
}

#[test]
fn a_log_another_process_rotated_is_followed_not_rotated_again() {
    let dir = tempfile::tempdir().unwrap();
    let (path, a) = log_file(dir.path());
    let (_, b) = log_file(dir.path());
    let mut a = Rotating::fd(a, &path, 100, 3);
    let mut b = Rotating::fd(b, &path, 100, 3);
    for _ in 0..4 {
        a.write(b"a ..........................\n").unwrap();
    }
    assert!(numbered(&path, 1).exists());
    // b's file is the one just renamed, past the bound: b follows to the new one.
    b.write(b"b1\n").unwrap();
    b.write(b"b2\n").unwrap();
    assert!(!numbered(&path, 2).exists(), "rotated twice");
    assert!(read(&numbered(&path, 1)).ends_with("b1\n"));
    assert_eq!(read(&path), "b2\n");
    a.write(b"a\n").unwrap();
    assert_eq!(read(&path), "b2\na\n");
}

#[test]
fn a_reader_that_does_not_read_costs_lines_never_a_blocked_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (_keep, write) = crate::sys::pipe_cloexec().unwrap();
    let mut log = Rotating::fd(write, &dir.path().join("server.log"), 100, 3);
    let line = [b'x'; MAX_LINE];
    let mut refused = None;
    for i in 0..1000 {
        if log.write(&line).is_err() {
            refused = Some(i);
            break;
        }
    }
    // A pipe holds 64 KiB by default.
    assert!(refused.is_some_and(|i| i >= 1), "{refused:?}");
    assert!(!dir.path().join("server.log.1").exists());
}

/// The child of the next test: its stderr is `server.log`.
const CHILD: &str = "HERDR_LOG_TEST_ROTATE_STDERR";

#[test]
fn a_servers_stderr_moves_to_the_new_file_and_a_panic_is_a_record_there() {
    if let Some(dir) = std::env::var_os(CHILD) {
        let path = Path::new(&dir).join("server.log");
        init(&path);
        let filler = "y".repeat(3000);
        // Past the 1 MiB bound.
        for i in 0..400 {
            info!("server", "filler {i} {filler}");
        }
        nix::unistd::write(std::io::stderr().as_fd(), b"written to fd 2\n").unwrap();
        let _ = std::panic::catch_unwind(|| panic!("on purpose\nsecond line"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (path, fd) = log_file(dir.path());
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "log::tests::a_servers_stderr_moves_to_the_new_file_and_a_panic_is_a_record_there",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .env_remove(ENV)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::from(fd))
        .status()
        .unwrap();
    assert!(out.success(), "{out:?}");
    let old = read(&numbered(&path, 1));
    let new = read(&path);
    assert!(old.contains(" INFO server: filler 0 y"), "{}", &old[..200]);
    assert!(old.len() as u64 >= MAX_FILE_BYTES);
    assert!(new.contains("written to fd 2\n"), "{new}");
    assert!(!old.contains("written to fd 2"));
    let panic = new.lines().find(|l| l.contains(" ERROR panic: thread '"));
    assert!(
        panic.is_some_and(|l| l.contains("on purpose\\nsecond line")),
        "{new}"
    );
    assert_eq!(mode(&path), 0o600);
}
