//! Passing descriptors between processes over a unix socket (SCM_RIGHTS), and watching a
//! process we did not start (pidfd).
//!
//! Invariants: every received descriptor is wrapped in an `OwnedFd` the moment it arrives
//! (CLOEXEC, via MSG_CMSG_CLOEXEC), so an error path can never leak one; a truncated
//! control message (MSG_CTRUNC) or a batch whose count disagrees with its header is an
//! error after closing everything that did arrive.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

use super::errno_to_io;

/// Descriptors per message: the kernel refuses more than 253 (SCM_MAX_FD) in one.
pub const MAX_FDS_PER_MESSAGE: usize = 200;

/// Sends `fds` in batches of at most [`MAX_FDS_PER_MESSAGE`]; each batch is one message
/// whose 4-byte payload is its count. The caller keeps its descriptors (the receiver gets
/// duplicates).
pub fn send_fds(sock: &UnixStream, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    for batch in fds.chunks(MAX_FDS_PER_MESSAGE) {
        let raw: Vec<RawFd> = batch.iter().map(|f| f.as_raw_fd()).collect();
        let header = (batch.len() as u32).to_be_bytes();
        send_with_fds(sock, &header, &raw)?;
    }
    Ok(())
}

fn send_with_fds(sock: &UnixStream, payload: &[u8], raw: &[RawFd]) -> io::Result<()> {
    let iov = [io::IoSlice::new(payload)];
    let cmsg = [ControlMessage::ScmRights(raw)];
    let sent = loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None) {
            Ok(n) => break n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(errno_to_io(e)),
        }
    };
    // The descriptors travelled with the first byte; the rest of a short send is plain.
    if sent < payload.len() {
        (&*sock).write_all(&payload[sent..])?;
    }
    Ok(())
}

/// Receives exactly `expected` descriptors sent by [`send_fds`], in order.
pub fn recv_fds(sock: &UnixStream, expected: usize) -> io::Result<Vec<OwnedFd>> {
    let mut all = Vec::with_capacity(expected);
    while all.len() < expected {
        let (count, fds) = recv_batch(sock, MAX_FDS_PER_MESSAGE)?;
        if fds.len() != count {
            // `fds` and `all` close here.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a batch announced {count} descriptors but carried {}",
                    fds.len()
                ),
            ));
        }
        all.extend(fds);
        if all.len() > expected {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("received {} descriptors, expected {expected}", all.len()),
            ));
        }
    }
    Ok(all)
}

/// One message: its announced count and the descriptors that came with it. `room` is
/// how many descriptors the control buffer holds; more than that is MSG_CTRUNC.
pub fn recv_batch(sock: &UnixStream, room: usize) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut header = [0u8; 4];
    // u64 elements keep the control buffer aligned for cmsghdr.
    let mut cmsg_buf = vec![0u64; cmsg_space_for(room).div_ceil(8)];
    let (n, fds, truncated) = loop {
        let mut iov = libc::iovec {
            iov_base: header.as_mut_ptr().cast(),
            iov_len: header.len(),
        };
        // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg_buf.as_mut_ptr().cast();
        msg.msg_controllen = (cmsg_buf.len() * 8) as _;
        // SAFETY: msg describes buffers we own for the duration of the call.
        let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // Every descriptor that arrived, even in a truncated buffer, is taken into
        // ownership before anything else can fail.
        let mut fds = Vec::new();
        // SAFETY: the CMSG_* walk stays within msg_controllen as the kernel set it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c) as *const RawFd;
                    let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..len / std::mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        break (r as usize, fds, msg.msg_flags & libc::MSG_CTRUNC != 0);
    };
    if truncated {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "descriptors were cut off in transit (MSG_CTRUNC; {} arrived and were closed)",
                fds.len()
            ),
        ));
    }
    if n == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    if n < header.len() {
        io::Read::read_exact(&mut &*sock, &mut header[n..])?;
    }
    Ok((u32::from_be_bytes(header) as usize, fds))
}

fn cmsg_space_for(fds: usize) -> usize {
    // SAFETY: CMSG_SPACE is a pure size computation.
    unsafe { libc::CMSG_SPACE((fds * std::mem::size_of::<RawFd>()) as u32) as usize }
}

/// A handle on a process that is not our child: it cannot be waited for, but it can be
/// told apart from a later process that reuses its pid.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns. pidfds are always CLOEXEC.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether the process behind a pidfd still runs (the pidfd turns readable when it ends).
pub fn pidfd_alive(pidfd: BorrowedFd<'_>) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(pidfd, PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => true,
        Ok(_) => false,
        Err(_) => false,
    }
}

/// The session of the terminal behind a PTY master: the pid of the program that leads it
/// (the pane's shell), while that program lives.
pub fn tty_session(master: BorrowedFd<'_>) -> io::Result<i32> {
    let mut sid: libc::pid_t = 0;
    // SAFETY: TIOCGSID writes one pid_t into the pointer, which lives for the call.
    let r = unsafe { libc::ioctl(master.as_fd().as_raw_fd(), libc::TIOCGSID, &mut sid) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many open descriptors of this process point at the same pipes as `fds` (other
    /// tests open and close descriptors concurrently; only ours are counted).
    fn copies_of(fds: &[OwnedFd]) -> usize {
        let targets: Vec<String> = super::super::open_fds()
            .into_iter()
            .filter(|(n, _)| fds.iter().any(|f| f.as_raw_fd() == *n))
            .map(|(_, t)| t)
            .collect();
        super::super::open_fds()
            .iter()
            .filter(|(_, t)| targets.contains(t))
            .count()
    }

    fn pipes(n: usize) -> Vec<OwnedFd> {
        (0..n)
            .flat_map(|_| {
                let (r, w) = nix::unistd::pipe().unwrap();
                [r, w]
            })
            .collect()
    }

    #[test]
    fn many_descriptors_travel_in_batches_and_stay_usable() {
        let _guard = crate::sys::test_fd_lock();
        let (a, b) = UnixStream::pair().unwrap();
        let fds = pipes(200); // 400 descriptors: two full batches and a partial one
        let borrowed: Vec<BorrowedFd> = fds.iter().map(|f| f.as_fd()).collect();
        let sender = std::thread::scope(|s| {
            let h = s.spawn(|| send_fds(&a, &borrowed));
            let got = recv_fds(&b, fds.len()).unwrap();
            h.join().unwrap().unwrap();
            got
        });
        assert_eq!(sender.len(), 400);
        // Pipe 7's write end, received, feeds pipe 7's original read end.
        nix::unistd::write(&sender[15], b"hi").unwrap();
        let mut buf = [0u8; 2];
        nix::unistd::read(&fds[14], &mut buf).unwrap();
        assert_eq!(&buf, b"hi");
        let flags = nix::fcntl::fcntl(&sender[0], nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert!(
            nix::fcntl::FdFlag::from_bits_retain(flags).contains(nix::fcntl::FdFlag::FD_CLOEXEC)
        );
    }

    /// Sends the descriptors of `pipes` pipes in one message whose header claims `claim`,
    /// lets `receive` fail on it, and checks nothing received stays open.
    fn failed_receive(
        pipes_n: usize,
        claim: u32,
        receive: impl Fn(&UnixStream) -> io::Error,
    ) -> io::Error {
        let _guard = crate::sys::test_fd_lock();
        let (a, b) = UnixStream::pair().unwrap();
        let fds = pipes(pipes_n);
        let before = copies_of(&fds);
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        send_with_fds(&a, &claim.to_be_bytes(), &raw).unwrap();
        let err = receive(&b);
        assert_eq!(copies_of(&fds), before, "{:?}", super::super::open_fds());
        err
    }

    #[test]
    fn a_truncated_control_message_is_an_error_and_leaks_nothing() {
        // Room for 2 of the 10: the kernel cuts the rest off and says so.
        let err = failed_receive(5, 10, |b| recv_batch(b, 2).unwrap_err());
        assert!(err.to_string().contains("MSG_CTRUNC"), "{err}");
    }

    #[test]
    fn a_count_mismatch_closes_every_received_descriptor() {
        // The header promises 7, the message carries 4.
        let err = failed_receive(2, 7, |b| recv_fds(b, 7).unwrap_err());
        assert!(err.to_string().contains("announced 7"), "{err}");
    }

    #[test]
    fn a_pidfd_tells_when_its_process_ends() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let fd = pidfd_open(child.id() as i32).unwrap();
        assert!(pidfd_alive(fd.as_fd()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!pidfd_alive(fd.as_fd()));
    }
}
