//! A private network for roaming tests: a "devbox" network namespace joined to this one
//! by a veth pair with private addresses, and a link that can be cut the way a dead
//! Wi-Fi cuts it — packets vanish (a blackhole route on the devbox side drops everything
//! it would send back), so the client sees silence, never a fast error — or the way a
//! Wi-Fi switched off cuts it (no route: attempts fail at once). Everything is
//! removed on drop, also when the test panics; names are unique per test and process.
#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Netns {
    /// The devbox namespace's name (for `ip netns exec`).
    pub name: String,
    /// This side's end of the veth pair (the other one lives in the namespace).
    near: String,
    /// This side's address and the devbox's.
    pub near_addr: String,
    pub far_addr: String,
    /// The address this side moves to when it roams.
    other_addr: String,
    cut: Option<Cut>,
}

/// How the link is cut.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Cut {
    /// Everything the devbox sends here vanishes (a dead Wi-Fi, a cable pulled far away):
    /// the client sees silence, connection attempts hang.
    Silent,
    /// This machine has no route to the devbox (its Wi-Fi is off): attempts fail at once.
    NoRoute,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// None (with the reason printed) where namespaces cannot be made: not root, or no
    /// `ip netns`.
    pub fn new() -> Option<Netns> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let usable = nix::unistd::getuid().is_root()
            && Command::new("ip")
                .args(["netns", "list"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if !usable {
            eprintln!("skipped: needs root and `ip netns` (iproute2)");
            return None;
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // Interface names have at most 15 characters; one /29 out of 10.231.0.0/16 per
        // (process, test), so parallel test binaries do not share a subnet.
        let id = format!("{:x}{n:x}", pid % 0xfffff);
        let slot = (pid.wrapping_mul(97).wrapping_add(n)) % 8192;
        let (a, b) = (slot / 32, (slot % 32) * 8);
        let mut net = Netns {
            name: format!("herdr-devbox-{id}"),
            near: format!("hrv{id}"),
            near_addr: format!("10.231.{a}.{}", b + 1),
            far_addr: format!("10.231.{a}.{}", b + 2),
            other_addr: format!("10.231.{a}.{}", b + 3),
            cut: None,
        };
        if let Err(e) = net.build() {
            // (Drop removes what was made.)
            panic!("cannot set up the test network: {e}");
        }
        Some(net)
    }

    fn build(&mut self) -> Result<(), String> {
        let far = format!("{}p", self.near);
        ip(&["netns", "add", &self.name])?;
        ip(&[
            "link", "add", &self.near, "type", "veth", "peer", "name", &far,
        ])?;
        ip(&["link", "set", &far, "netns", &self.name])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/29", self.near_addr),
            "dev",
            &self.near,
        ])?;
        ip(&["link", "set", &self.near, "up"])?;
        self.exec_ip(&["addr", "add", &format!("{}/29", self.far_addr), "dev", &far])?;
        self.exec_ip(&["link", "set", &far, "up"])?;
        self.exec_ip(&["link", "set", "lo", "up"])
    }

    fn exec_ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", &self.name, "ip"];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// A command that runs inside the devbox namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// This side's address changes, as when a laptop joins another Wi-Fi: the old one
    /// goes (with it every connection made from it, without a word) and a new one comes.
    pub fn roam(&mut self) {
        ip(&[
            "addr",
            "del",
            &format!("{}/29", self.near_addr),
            "dev",
            &self.near,
        ])
        .expect("drop the old address");
        ip(&[
            "addr",
            "add",
            &format!("{}/29", self.other_addr),
            "dev",
            &self.near,
        ])
        .expect("take a new address");
        std::mem::swap(&mut self.near_addr, &mut self.other_addr);
    }

    /// The devbox's established TCP connections, as `ss` prints them.
    pub fn peers(&self) -> String {
        let out = self
            .command("ss")
            .args(["-Htn", "state", "established"])
            .output()
            .expect("ss");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Cuts the link, silently or not (see `Cut`).
    pub fn cut(&mut self, how: Cut) {
        assert!(self.cut.is_none(), "already cut");
        self.route("add", how).expect("cut the link");
        self.cut = Some(how);
    }

    /// Restores the link.
    pub fn restore(&mut self) {
        if let Some(how) = self.cut.take() {
            self.route("del", how).expect("restore the link");
        }
    }

    fn route(&self, verb: &str, how: Cut) -> Result<(), String> {
        match how {
            Cut::Silent => {
                let near = format!("{}/32", self.near_addr);
                self.exec_ip(&["route", verb, "blackhole", &near])
            }
            Cut::NoRoute => {
                let far = format!("{}/32", self.far_addr);
                ip(&["route", verb, "unreachable", &far])
            }
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // (A route of this namespace outlives the veth pair.)
        if let Some(how) = self.cut.take() {
            let _ = self.route("del", how);
        }
        // Every process left in the namespace is this test's: an sshd session whose
        // client's address went away would wait for TCP to give up (many minutes).
        if let Ok(out) = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
        {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Ok(pid) = pid.parse::<i32>() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
        // Deleting one end deletes the pair; the namespace goes when its last process does.
        let _ = ip(&["link", "del", &self.near]);
        let _ = ip(&["netns", "del", &self.name]);
    }
}
