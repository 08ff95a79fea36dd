//! What a remote host is, and whether it has this herdr: one fixed `sh` script, answered as
//! `herdr-probe key=value` lines, and the rules that decide whether this very binary runs
//! there (same OS and architecture, and a C library it can use).

/// Looks for this herdr's exact version: the versioned install place, the non-interactive
/// PATH, the usual install places, then the login shell's PATH (which often differs).
pub const PROBE: &str = r#"v=$1
want="herdr $v"
target="$HOME/.local/share/herdr/bin/$v/herdr"
os=$(uname -s 2>/dev/null || echo unknown)
arch=$(uname -m 2>/dev/null || echo unknown)
libc=unknown
if [ "$os" = Linux ]; then
  if ls /lib/ld-musl-*.so.1 >/dev/null 2>&1 || (ldd --version 2>&1 || true) | grep -qi musl; then libc=musl
  else g=$(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2); [ -n "$g" ] && libc="glibc-$g"; fi
fi
# A profile or a binary that waits for something must not hang the probe.
limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout 10"; fi
shell=${SHELL:-}
[ -n "$shell" ] || shell=$(getent passwd "$(id -un 2>/dev/null)" 2>/dev/null | cut -d: -f7)
ok() { [ -n "$1" ] && [ -f "$1" ] && [ -x "$1" ] && [ "$($limit "$1" --version 2>/dev/null </dev/null)" = "$want" ]; }
found=
for c in "$target" "$(command -v herdr 2>/dev/null)" "$HOME/.local/bin/herdr" /usr/local/bin/herdr /opt/homebrew/bin/herdr /usr/bin/herdr; do
  if ok "$c"; then found=$c; break; fi
done
if [ -z "$found" ] && [ -n "$shell" ] && [ -x "$shell" ]; then
  c=$($limit "$shell" -lc 'command -v herdr' </dev/null 2>/dev/null | tail -n 1)
  case "$c" in /*) ok "$c" && found=$c;; esac
fi
fetch=
if command -v curl >/dev/null 2>&1; then fetch=curl; elif command -v wget >/dev/null 2>&1; then fetch=wget; fi
printf 'herdr-probe os=%s\nherdr-probe arch=%s\nherdr-probe libc=%s\nherdr-probe shell=%s\nherdr-probe fetch=%s\nherdr-probe target=%s\nherdr-probe found=%s\n' \
  "$os" "$arch" "$libc" "$shell" "$fetch" "$target" "$found""#;

/// What the remote said about itself.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Probe {
    pub os: String,
    pub arch: String,
    /// `glibc-2.36`, `musl`, or `unknown` (not Linux, or not found out).
    pub libc: String,
    pub shell: String,
    /// `curl`, `wget` or empty: what can download a release there.
    pub fetch: String,
    /// Where this version is installed when herdr installs it.
    pub target: String,
    /// A herdr of exactly this version, if one was found.
    pub found: Option<String>,
}

pub fn parse(out: &str) -> Option<Probe> {
    let mut p = Probe::default();
    let mut seen = 0;
    for line in out.lines() {
        let Some((key, value)) = line
            .strip_prefix("herdr-probe ")
            .and_then(|l| l.split_once('='))
        else {
            continue;
        };
        let value = value.to_string();
        seen += 1;
        match key {
            "os" => p.os = value,
            "arch" => p.arch = value,
            "libc" => p.libc = value,
            "shell" => p.shell = value,
            "fetch" => p.fetch = value,
            "target" => p.target = value,
            "found" => p.found = Some(value).filter(|v| !v.is_empty()),
            _ => seen -= 1,
        }
    }
    (seen >= 7 && !p.target.is_empty()).then_some(p)
}

impl Probe {
    /// The remote's platform as release manifests name it (`linux-x86_64`,
    /// `linux-x86_64-musl`, `macos-aarch64`), if herdr builds for it at all.
    pub fn platform(&self) -> Option<String> {
        let os = match self.os.as_str() {
            "Linux" => "linux",
            "Darwin" => "macos",
            _ => return None,
        };
        let arch = match self.arch.as_str() {
            "x86_64" | "amd64" => "x86_64",
            "aarch64" | "arm64" => "aarch64",
            _ => return None,
        };
        let musl = if self.libc == "musl" { "-musl" } else { "" };
        Some(format!("{os}-{arch}{musl}"))
    }
}

/// Why this very binary cannot run on the remote, if it cannot: another OS or
/// architecture, or a C library older than (or other than) the one it was linked against.
pub fn cannot_run_here(probe: &Probe, binary: &[u8]) -> Option<String> {
    let here = crate::update::manifest::platform();
    let Some(there) = probe.platform() else {
        return Some(format!("herdr does not run on {} {}", probe.os, probe.arch));
    };
    let there_base = there.trim_end_matches("-musl");
    if there_base != here {
        return Some(format!(
            "it is {} {}, and this herdr is built for {here}",
            probe.os, probe.arch
        ));
    }
    if !loads_libraries(binary) {
        // Linked statically (herdr on Linux with glibc, .cargo/config.toml): it needs
        // no C library there at all.
        return None;
    }
    let needed = glibc_needed(binary)?;
    let (maj, min) = needed;
    match probe.libc.strip_prefix("glibc-").and_then(parse_pair) {
        Some(have) if have >= needed => None,
        Some((a, b)) => Some(format!(
            "its C library is glibc {a}.{b}, and this herdr needs glibc {maj}.{min} or newer"
        )),
        None if probe.libc == "musl" => Some(format!(
            "it uses the musl C library, and this herdr needs glibc {maj}.{min} or newer"
        )),
        None => None,
    }
}

fn parse_pair(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split('.');
    let a = it.next()?.parse().ok()?;
    let b = it.next().map_or(Some(0), |b| {
        b.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    })?;
    Some((a, b))
}

/// Whether an ELF binary names a program interpreter (the dynamic loader), which loads
/// the C library it was linked against; one that names none is static. A binary this
/// cannot read (not 64-bit little-endian ELF) counts as one that does.
pub fn loads_libraries(binary: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    fn bytes<const N: usize>(binary: &[u8], at: usize) -> Option<[u8; N]> {
        binary.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    let elf64_le = binary.starts_with(b"\x7fELF") && binary.get(4..6) == Some(&[2, 1]);
    let headers = || {
        let at = usize::try_from(u64::from_le_bytes(bytes(binary, 0x20)?)).ok()?;
        let size = usize::from(u16::from_le_bytes(bytes(binary, 0x36)?));
        let count = usize::from(u16::from_le_bytes(bytes(binary, 0x38)?));
        (0..count)
            .map(|i| {
                let entry = at.checked_add(i.checked_mul(size)?)?;
                Some(u32::from_le_bytes(bytes(binary, entry)?))
            })
            .collect::<Option<Vec<u32>>>()
    };
    match headers().filter(|_| elf64_le) {
        Some(types) => types.contains(&PT_INTERP),
        None => true,
    }
}

/// The newest glibc symbol version a dynamically linked binary asks for (`None` for a
/// static binary, which needs none).
pub fn glibc_needed(binary: &[u8]) -> Option<(u32, u32)> {
    let tag = [b"GLIBC_".as_slice(), b"2."].concat();
    let mut best = None;
    let mut at = 0;
    while let Some(i) = find(&binary[at..], &tag) {
        let start = at + i + 6;
        let end = binary[start..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'.'))
            .map_or(binary.len(), |n| start + n);
        if let Some(v) = std::str::from_utf8(&binary[start..end])
            .ok()
            .and_then(parse_pair)
        {
            best = best.max(Some(v));
        }
        at = end.max(at + i + 1);
    }
    best
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(os: &str, arch: &str, libc: &str) -> Probe {
        Probe {
            os: os.into(),
            arch: arch.into(),
            libc: libc.into(),
            target: "/t".into(),
            ..Default::default()
        }
    }

    #[test]
    fn probe_lines_parse_with_spaces_and_motd_around() {
        let p = parse(
            "Welcome!\nherdr-probe os=Linux\nherdr-probe arch=x86_64\nherdr-probe libc=glibc-2.36\n\
             herdr-probe shell=/bin/zsh\nherdr-probe fetch=curl\n\
             herdr-probe target=/home/a b/.local/share/herdr/bin/0.1.0/herdr\nherdr-probe found=\n",
        )
        .unwrap();
        assert_eq!(p.found, None);
        assert_eq!(p.target, "/home/a b/.local/share/herdr/bin/0.1.0/herdr");
        assert_eq!(p.platform().as_deref(), Some("linux-x86_64"));
        assert!(parse("'uname' is not recognized as an internal command").is_none());
    }

    #[test]
    fn the_probe_script_runs_under_sh_and_finds_herdr_on_the_login_path() {
        let home = tempfile::tempdir().unwrap();
        let v = crate::protocol::version();
        let tools = home.path().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let fake = tools.join("herdr");
        std::fs::write(&fake, format!("#!/bin/sh\necho 'herdr {v}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Only a login shell puts ~/tools on PATH.
        std::fs::write(
            home.path().join(".bash_profile"),
            "PATH=\"$HOME/tools:$PATH\"\n",
        )
        .unwrap();
        let run = |shell: &str| {
            let out = std::process::Command::new("sh")
                .args(["-c", PROBE, "herdr-remote", v])
                .env_clear()
                .env("HOME", home.path())
                .env("PATH", "/usr/bin:/bin")
                .env("SHELL", shell)
                .output()
                .unwrap();
            parse(&String::from_utf8_lossy(&out.stdout)).unwrap()
        };
        let p = run("/bin/bash");
        assert_eq!(p.found.as_deref(), fake.to_str());
        assert_eq!(
            p.platform().unwrap().trim_end_matches("-musl"),
            crate::update::manifest::platform()
        );
        assert!(p.libc.starts_with("glibc-") || p.libc == "musl", "{p:?}");
        // Without that login shell it is not found.
        assert_eq!(run("/bin/sh").found, None);
    }

    #[test]
    fn a_binary_says_which_glibc_it_needs() {
        let bin = b"\0libc.so.6\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0GLIBC_PRIVATE\0GLIBC_2.\0";
        assert_eq!(glibc_needed(bin), Some((2, 34)));
        assert_eq!(glibc_needed(b"static, no versions"), None);
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        // herdr links glibc in (.cargo/config.toml): it needs none on the remote.
        if cfg!(target_os = "linux") {
            assert_eq!(loads_libraries(&own), !cfg!(target_feature = "crt-static"));
        }
        if cfg!(all(target_env = "gnu", not(target_feature = "crt-static"))) {
            assert!(glibc_needed(&own).is_some());
        }
        // Program headers of its own making: with an interpreter, without, cut short, and
        // placed past the end of memory; and a file that is not ELF.
        let elf = |types: &[u32], at: u64| {
            let mut b = b"\x7fELF\x02\x01".to_vec();
            b.resize(0x40, 0);
            b[0x20..0x28].copy_from_slice(&at.to_le_bytes());
            b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
            b[0x38..0x3a].copy_from_slice(&(types.len() as u16).to_le_bytes());
            for t in types {
                let mut header = [0u8; 56];
                header[..4].copy_from_slice(&t.to_le_bytes());
                b.extend_from_slice(&header);
            }
            b
        };
        assert!(loads_libraries(&elf(&[6, 3, 1], 0x40)));
        assert!(!loads_libraries(&elf(&[6, 1, 1], 0x40)));
        assert!(loads_libraries(&elf(&[6, 1, 1], 0x40)[..0x40 + 56]));
        assert!(loads_libraries(&elf(&[6, 1], u64::MAX - 8)));
        assert!(loads_libraries(b"#!/bin/sh\n"));
    }

    #[test]
    fn remotes_this_binary_cannot_run_on_are_explained() {
        let here = crate::update::manifest::platform();
        let (os, arch) = match here.as_str() {
            "linux-x86_64" => ("Linux", "x86_64"),
            "linux-aarch64" => ("Linux", "aarch64"),
            _ => return,
        };
        let bin = b"GLIBC_2.34\0";
        assert_eq!(cannot_run_here(&probe(os, arch, "glibc-2.39"), bin), None);
        assert!(cannot_run_here(&probe(os, arch, "glibc-2.28"), bin)
            .unwrap()
            .contains("glibc 2.28"));
        assert!(cannot_run_here(&probe(os, arch, "musl"), bin)
            .unwrap()
            .contains("musl"));
        assert_eq!(cannot_run_here(&probe(os, arch, "musl"), b"static"), None);
        // herdr itself, linked statically: on any C library, even one that names a
        // version in its own text.
        if cfg!(target_feature = "crt-static") {
            let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
            for libc in ["musl", "glibc-2.17", "unknown"] {
                assert_eq!(
                    cannot_run_here(&probe(os, arch, libc), &own),
                    None,
                    "{libc}"
                );
            }
        }
        assert!(cannot_run_here(&probe("Darwin", "arm64", "unknown"), bin)
            .unwrap()
            .contains("Darwin arm64"));
        assert_eq!(
            probe("Darwin", "arm64", "unknown").platform().as_deref(),
            Some("macos-aarch64")
        );
        assert_eq!(
            probe("Linux", "x86_64", "musl").platform().as_deref(),
            Some("linux-x86_64-musl")
        );
        assert_eq!(probe("SunOS", "sparc", "unknown").platform(), None);
    }
}
