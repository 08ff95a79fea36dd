//! Noticing that this machine's network changed under a connection: an address added or
//! removed, a route changed — a new Wi-Fi, a VPN coming up, a phone hotspot, a cable. An
//! old TCP connection may then be dead without a word, and the sooner it is probed the
//! sooner a new one is made.
//!
//! On Linux a netlink socket subscribed to address and route changes wakes the watcher
//! for each change (no polling); elsewhere, or where netlink is refused, the interface
//! addresses are compared every POLL_EVERY (one `getifaddrs`, cheap).

use std::collections::BTreeSet;
use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

/// Where there is no netlink: how often the addresses are compared.
const POLL_EVERY: Duration = Duration::from_secs(1);

pub struct NetWatch {
    how: How,
}

enum How {
    /// With the addresses last seen: a message about an address that leaves the set as
    /// it was (IPv6 refreshes lifetimes at each router advertisement) is no change.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Netlink(OwnedFd, BTreeSet<String>),
    Poll(BTreeSet<String>),
}

impl Default for NetWatch {
    /// Watches with netlink where it can, else by comparing the addresses.
    fn default() -> NetWatch {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Ok(fd) = netlink::subscribe() {
            return NetWatch {
                how: How::Netlink(fd, addresses()),
            };
        }
        NetWatch::polling()
    }
}

impl NetWatch {
    /// Watches by comparing the addresses every POLL_EVERY.
    pub fn polling() -> NetWatch {
        NetWatch {
            how: How::Poll(addresses()),
        }
    }

    /// Blocks until the network changed; an error when it cannot be watched any more.
    pub fn changed(&mut self) -> io::Result<()> {
        match &mut self.how {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            How::Netlink(fd, last) => loop {
                let change = netlink::wait(fd)?;
                let now = addresses();
                if change == netlink::Change::Route || now != *last {
                    *last = now;
                    return Ok(());
                }
            },
            How::Poll(last) => loop {
                std::thread::sleep(POLL_EVERY);
                let now = addresses();
                if now != *last {
                    *last = now;
                    return Ok(());
                }
            },
        }
    }
}

/// This machine's interface addresses, as "interface address" (an empty set where they
/// cannot be read: then nothing changes).
pub fn addresses() -> BTreeSet<String> {
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return BTreeSet::new();
    };
    all.filter_map(|a| {
        let addr = a.address?;
        let ip = match (addr.as_sockaddr_in(), addr.as_sockaddr_in6()) {
            (Some(v4), _) => v4.ip().to_string(),
            (_, Some(v6)) => v6.ip().to_string(),
            _ => return None,
        };
        Some(format!("{} {ip}", a.interface_name))
    })
    .collect()
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod netlink {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};

    use nix::errno::Errno;
    use nix::sys::socket::{
        bind, recv, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType,
    };

    // From <linux/rtnetlink.h>: the multicast groups, message types and the tables.
    const RTMGRP_IPV4_IFADDR: u32 = 0x10;
    const RTMGRP_IPV4_ROUTE: u32 = 0x40;
    const RTMGRP_IPV6_IFADDR: u32 = 0x100;
    const RTMGRP_IPV6_ROUTE: u32 = 0x400;
    const RTM_NEWADDR: u16 = 20;
    const RTM_DELADDR: u16 = 21;
    const RTM_NEWROUTE: u16 = 24;
    const RTM_DELROUTE: u16 = 25;
    const RT_TABLE_LOCAL: u8 = 255;
    const RTM_F_CLONED: u32 = 0x200;
    /// sizeof(struct nlmsghdr), and where struct rtmsg's fields are after it.
    const NLMSG_HDRLEN: usize = 16;
    const RTM_TABLE_AT: usize = NLMSG_HDRLEN + 4;
    const RTM_FLAGS_AT: usize = NLMSG_HDRLEN + 8;

    pub(super) fn subscribe() -> io::Result<OwnedFd> {
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkRoute,
        )?;
        let groups =
            RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_IFADDR | RTMGRP_IPV6_ROUTE;
        bind(fd.as_raw_fd(), &NetlinkAddr::new(0, groups))?;
        Ok(fd)
    }

    /// What a batch of messages changed.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Change {
        /// An address was added, removed or updated.
        Address,
        /// A route (or, messages being lost, anything).
        Route,
    }

    /// Blocks until a message that matters comes (a batch of them counts once).
    pub(super) fn wait(fd: &OwnedFd) -> io::Result<Change> {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    if let Some(change) = matters(&buf[..n]) {
                        return Ok(change);
                    }
                }
                Err(Errno::EINTR) => {}
                // Messages were lost (a burst overflowed the buffer): something changed.
                Err(Errno::ENOBUFS) => return Ok(Change::Route),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// What a datagram of netlink messages holds that a connection may feel: a route
    /// added or removed outside the local table (which only mirrors the addresses) and
    /// not a cached clone, or else an address added, removed or updated.
    pub(super) fn matters(mut buf: &[u8]) -> Option<Change> {
        let mut address = false;
        while buf.len() >= NLMSG_HDRLEN {
            let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            let kind = u16::from_ne_bytes([buf[4], buf[5]]);
            if len < NLMSG_HDRLEN || len > buf.len() {
                break;
            }
            let msg = &buf[..len];
            address |= matches!(kind, RTM_NEWADDR | RTM_DELADDR);
            let hit = match kind {
                RTM_NEWROUTE | RTM_DELROUTE => {
                    msg.len() >= RTM_FLAGS_AT + 4 && {
                        let table = msg[RTM_TABLE_AT];
                        let flags = u32::from_ne_bytes([
                            msg[RTM_FLAGS_AT],
                            msg[RTM_FLAGS_AT + 1],
                            msg[RTM_FLAGS_AT + 2],
                            msg[RTM_FLAGS_AT + 3],
                        ]);
                        table != RT_TABLE_LOCAL && flags & RTM_F_CLONED == 0
                    }
                }
                _ => false,
            };
            if hit {
                return Some(Change::Route);
            }
            // Messages are aligned to 4 bytes.
            let next = (len + 3) & !3;
            buf = buf.get(next..).unwrap_or(&[]);
        }
        address.then_some(Change::Address)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A route message: header, then struct rtmsg (12 bytes).
        fn route(kind: u16, table: u8, flags: u32) -> Vec<u8> {
            let mut m = Vec::new();
            m.extend_from_slice(&28u32.to_ne_bytes());
            m.extend_from_slice(&kind.to_ne_bytes());
            m.extend_from_slice(&[0u8; 10]);
            m.extend_from_slice(&[2, 32, 0, 0, table, 0, 0, 1]);
            m.extend_from_slice(&flags.to_ne_bytes());
            m
        }

        #[test]
        fn address_and_main_routes_matter_local_and_cloned_ones_do_not() {
            let route_change = Some(Change::Route);
            assert_eq!(matters(&route(RTM_NEWROUTE, 254, 0)), route_change);
            assert_eq!(
                matters(&route(RTM_DELROUTE, 100, 0)),
                route_change,
                "a VPN's"
            );
            assert_eq!(matters(&route(RTM_NEWROUTE, RT_TABLE_LOCAL, 0)), None);
            assert_eq!(matters(&route(RTM_NEWROUTE, 254, RTM_F_CLONED)), None);
            let mut addr = route(RTM_DELADDR, 0, 0);
            addr.truncate(24);
            addr[..4].copy_from_slice(&24u32.to_ne_bytes());
            assert_eq!(matters(&addr), Some(Change::Address));
            // One that matters after one that does not, in one datagram.
            let mut two = route(RTM_NEWROUTE, RT_TABLE_LOCAL, 0);
            two.extend(route(RTM_NEWROUTE, 254, 0));
            assert_eq!(matters(&two), route_change);
            // Garbage or a truncated header: nothing.
            assert_eq!(matters(&[1, 2, 3]), None);
            assert_eq!(matters(&200u32.to_ne_bytes().repeat(5)), None);
        }

        #[test]
        fn a_netlink_subscription_is_allowed_here() {
            subscribe().expect("netlink route socket");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_loopback_address_is_among_the_addresses() {
        let all = super::addresses();
        assert!(all.iter().any(|a| a.ends_with(" 127.0.0.1")), "{all:?}");
    }
}
