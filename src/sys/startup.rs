//! Memory only start-up needed, given back.
//!
//! A position-independent binary carries a table of relocations (`.rela.dyn`, about
//! 600 KiB for herdr: every pointer in its read-only data) that the dynamic loader reads
//! once, before `main`, and never again (herdr is linked with immediate binding). Those
//! pages stay mapped, counted in the RSS of every server and client, for nothing.
//! Unmapping them is always safe: they are clean pages of the file, read back from it if
//! anything ever touched them again.

/// The start and length of the running program's relocation table, from its dynamic
/// section (`DT_RELA`, `DT_RELASZ`).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn relocations() -> Option<(usize, usize)> {
    /// An entry of the dynamic section (`Elf64_Dyn`).
    #[repr(C)]
    struct Dyn {
        tag: i64,
        val: u64,
    }

    #[derive(Default)]
    struct Found {
        table: Option<(usize, usize)>,
    }

    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` for the duration of the call,
        // and `data` is the `Found` handed to dl_iterate_phdr below.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Found>()) };
        let base = info.dlpi_addr as usize;
        // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers of the object.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        let Some(dynamic) = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC) else {
            return 1;
        };
        let mut entry = (base + dynamic.p_vaddr as usize) as *const Dyn;
        let (mut at, mut len) = (None, None);
        loop {
            // SAFETY: the dynamic section is mapped for the life of the program and ends
            // with a DT_NULL entry.
            let entry_ = unsafe { &*entry };
            match entry_.tag {
                0 => break,                           // DT_NULL
                7 => at = Some(entry_.val as usize),  // DT_RELA
                8 => len = Some(entry_.val as usize), // DT_RELASZ
                _ => {}
            }
            // SAFETY: not past DT_NULL, so the next entry is still in the section.
            entry = unsafe { entry.add(1) };
        }
        if let (Some(at), Some(len)) = (at, len) {
            // The loader may have rewritten the address to where it is mapped.
            let at = if at < base { base + at } else { at };
            found.table = Some((at, len));
        }
        1 // the program itself is the first object: stop there
    }

    let mut found = Found::default();
    // SAFETY: `first` only reads what the loader hands it and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut found).cast()) };
    found.table
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn relocations() -> Option<(usize, usize)> {
    None
}

/// Unmaps the whole pages of the relocation table (see the module). Returns the bytes
/// given back.
pub fn release_relocations() -> usize {
    let Some((at, len)) = relocations() else {
        return 0;
    };
    let page = super::page_size();
    let start = at.div_ceil(page) * page;
    let end = (at + len) / page * page;
    if end <= start {
        return 0;
    }
    // SAFETY: [start, end) lies inside the program's own read-only mapping of its file;
    // MADV_DONTNEED on clean file-backed pages only drops them from this process's page
    // tables (a later read maps them again from the file).
    let r = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    if r == 0 {
        end - start
    } else {
        0
    }
}

/// Host names and users are looked up only with the sources glibc has built in (files,
/// DNS), whatever `/etc/nsswitch.conf` lists besides, in a herdr that links glibc
/// statically (.cargo/config.toml). glibc would load any other source (mdns, resolve,
/// myhostname, sss, systemd) from the host's shared libraries, which a static program
/// can only use when they are of the very glibc it was built with; elsewhere the load
/// fails or, worse, half succeeds. Only the built-in SSH client (`--ssh builtin`), the
/// download of an update and a user name when `$USER` is unset look names up.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
pub fn builtin_name_services() -> bool {
    unsafe extern "C" {
        /// glibc's override of nsswitch.conf for one database.
        fn __nss_configure_lookup(
            db: *const libc::c_char,
            service_line: *const libc::c_char,
        ) -> libc::c_int;
    }
    [
        (c"hosts", c"files dns"),
        (c"passwd", c"files"),
        (c"group", c"files"),
    ]
    .iter()
    // SAFETY: two NUL-terminated strings that outlive the call; glibc copies what it
    // keeps. Called first thing in main, before any lookup or thread.
    .all(|(db, line)| unsafe { __nss_configure_lookup(db.as_ptr(), line.as_ptr()) } == 0)
}

/// Linked dynamically, glibc loads its sources itself, of its own version.
#[cfg(not(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static")))]
pub fn builtin_name_services() -> bool {
    true
}

/// Has the server's threads share two heaps. glibc gives threads heaps of their own (up
/// to 8 a core) so they seldom wait for each other's allocations; a server has a thread
/// per pane, each allocating a little when its program prints, and every such heap keeps
/// free pages of its own: 4.2 MiB of 16.4 for 200 idle panes. Two heaps keep the main
/// thread from waiting on the terminals' threads on two cores; small allocations come
/// from each thread's own cache either way.
pub fn few_heaps() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; any value is accepted or refused.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Gives the free pages inside the heaps back to the system (the allocator keeps the
/// free space between blocks still in use, and its heaps' tops, resident otherwise);
/// whether any was given back.
pub fn trim_heaps() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only hands the allocator's own free pages back (MADV_DONTNEED
    // on whole free pages, sbrk down at the top); no block in use is touched.
    unsafe {
        libc::malloc_trim(0) != 0
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn free_pages_between_blocks_in_use_are_given_back() {
        // 8 MiB in blocks small enough to come from the heap, every other one freed:
        // none of the free space is at the heap's top, all of it is whole pages.
        let blocks: Vec<Vec<u8>> = (0..512).map(|_| vec![1u8; 16 << 10]).collect();
        let kept: Vec<Vec<u8>> = blocks.into_iter().step_by(2).collect();
        assert!(super::trim_heaps());
        assert!(kept.iter().all(|b| b.iter().all(|&x| x == 1)));
    }

    #[test]
    fn names_are_still_looked_up_with_the_built_in_sources_only() {
        assert!(super::builtin_name_services());
        // /etc/hosts and /etc/passwd answer as before.
        use std::net::ToSocketAddrs;
        let local: Vec<_> = ("localhost", 22).to_socket_addrs().unwrap().collect();
        assert!(local.iter().any(|a| a.ip().is_loopback()), "{local:?}");
        let root = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0)).unwrap();
        assert_eq!(root.map(|u| u.name).as_deref(), Some("root"));
    }

    #[test]
    fn the_relocation_table_is_found_and_given_back_without_harm() {
        let (at, len) = super::relocations().expect("a PIE test binary has DT_RELA");
        assert!(len > 0);
        // It is inside a mapping of the test binary itself.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let inside = maps.lines().any(|l| {
            let (range, rest) = l.split_once(' ').unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let (a, b) = (
                usize::from_str_radix(a, 16).unwrap(),
                usize::from_str_radix(b, 16).unwrap(),
            );
            rest.ends_with(exe.to_str().unwrap()) && a <= at && at + len <= b
        });
        assert!(inside, "{at:#x}+{len} not in a mapping of {exe:?}");
        let released = super::release_relocations();
        assert!(released > 0 && released <= len);
        // Everything keeps working: formatting and panics go through relocated tables.
        assert_eq!(format!("{:?}", Some(1)), "Some(1)");
        let caught = std::panic::catch_unwind(|| panic!("still unwinds"));
        assert!(caught.is_err());
    }
}
