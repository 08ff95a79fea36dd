//! Readiness of many descriptors whose set changes a little at a time (`epoll`): each is
//! registered once, and a wait costs what is ready, not what is watched. `poll` over a
//! thousand terminals walks all of them on every wake-up.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use super::errno_to_io;

/// An epoll instance (CLOEXEC). Level-triggered: a descriptor left readable is reported
/// again by the next wait.
pub struct Poller {
    epoll: Epoll,
    /// Room for what one wait reports.
    events: Vec<EpollEvent>,
}

impl Poller {
    /// An instance whose waits report up to `per_wait` ready descriptors (the rest, still
    /// ready, come with the next).
    pub fn new(per_wait: usize) -> io::Result<Poller> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(errno_to_io)?;
        Ok(Poller {
            epoll,
            events: vec![EpollEvent::empty(); per_wait.max(1)],
        })
    }

    /// Watches `fd` for input (and hang-up, which is always reported); its readiness is
    /// reported as `token`. The registration belongs to the open file: remove it before
    /// the descriptor is closed or handed on, or a duplicate elsewhere keeps it alive.
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        self.epoll
            .add(fd, EpollEvent::new(EpollFlags::EPOLLIN, token))
            .map_err(errno_to_io)
    }

    pub fn remove(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.epoll.delete(fd).map_err(errno_to_io)
    }

    /// Waits until something is ready or `timeout` passed (`None`: for ever), and puts
    /// the tokens of the ready descriptors in `ready` (cleared first). A signal ends the
    /// wait early with nothing ready.
    pub fn wait(&mut self, ready: &mut Vec<u64>, timeout: Option<Duration>) -> io::Result<()> {
        ready.clear();
        match self
            .epoll
            .wait(&mut self.events, super::poll_timeout(timeout))
        {
            Ok(n) => {
                ready.extend(self.events[..n].iter().map(EpollEvent::data));
                Ok(())
            }
            Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(errno_to_io(e)),
        }
    }
}
