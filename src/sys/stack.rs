//! A thread's stack, given back while the thread sleeps.
//!
//! Every pane has a thread (its terminal's actor) that spends nearly all its life asleep
//! in `poll`. The pages its stack touched once — parsing the program's output goes
//! deeper than the loop it waits in — stay resident for good: about 16 KiB a pane, the
//! larger part of an idle pane's memory. A thread that has been idle a while gives back
//! the pages below the frame it sleeps in; the kernel hands out zeroed ones again if it
//! goes that deep later (a few page faults, once per burst of work).

/// A thread's stack: where its usable part starts (it grows down towards there).
#[derive(Debug, Clone, Copy)]
pub struct Stack {
    low: usize,
}

/// Kept below this function's own locals: the rest of its frame and the call to
/// `madvise` (a return address; the call is a bare system call) live there, a few dozen
/// bytes.
const MARGIN: usize = 1024;

impl Stack {
    /// The calling thread's stack; None where it cannot be asked (or on the main thread,
    /// whose stack grows on demand and is not ours to trim).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn current() -> Option<Stack> {
        // SAFETY: pthread_getattr_np fills `attr` for the calling thread; it is read with
        // pthread_attr_getstack and destroyed once, on the success path only (on failure
        // nothing was initialised).
        unsafe {
            let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
            if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
                return None;
            }
            let mut attr = attr.assume_init();
            let mut addr: *mut libc::c_void = std::ptr::null_mut();
            let mut size: libc::size_t = 0;
            let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            if got != 0 || addr.is_null() || libc::getpid() == libc::gettid() {
                return None;
            }
            Some(Stack { low: addr as usize })
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn current() -> Option<Stack> {
        None
    }

    /// Gives back the whole pages of this stack below the caller's frame (less a margin);
    /// returns the bytes given back. Must be called on the thread the stack is of.
    #[inline(never)]
    pub fn release_unused(&self) -> usize {
        let here = 0u8;
        let sp = std::hint::black_box(&here) as *const u8 as usize;
        let page = super::page_size();
        let end = sp.saturating_sub(MARGIN) / page * page;
        let start = self.low.div_ceil(page) * page;
        if end <= start || sp < self.low {
            return 0;
        }
        // SAFETY: [start, end) is in this thread's own stack mapping, below the frame of
        // this call and the margin its callees use: no live data is there (a stack holds
        // none below its pointer). MADV_DONTNEED on private anonymous pages drops them;
        // a later touch maps a zeroed page.
        let r =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        if r == 0 {
            end - start
        } else {
            0
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::Stack;

    /// Resident bytes of the mapping that holds `addr`, from /proc/self/smaps.
    fn resident_at(addr: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a <= addr && addr < b;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(kib) = line.strip_prefix("Rss:") {
                    return kib.trim().trim_end_matches(" kB").parse::<usize>().unwrap() * 1024;
                }
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    #[inline(never)]
    fn deep(n: usize) -> u8 {
        let mut room = [0u8; 4096];
        room[n % 4096] = n as u8;
        if n == 0 {
            std::hint::black_box(&room)[0]
        } else {
            std::hint::black_box(deep(n - 1)) ^ std::hint::black_box(&room)[1]
        }
    }

    #[test]
    fn a_thread_gives_back_what_its_stack_touched_once_and_goes_on() {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(|| {
                let stack = Stack::current().expect("a spawned thread's stack");
                let here = 0u8;
                let at = &here as *const u8 as usize;
                // 256 KiB of frames, then back up here.
                deep(64);
                let touched = resident_at(at);
                assert!(touched >= 256 * 1024, "{touched}");
                let released = stack.release_unused();
                assert!(released >= 240 * 1024, "{released}");
                let after = resident_at(at);
                assert!(after + 240 * 1024 <= touched, "{touched} -> {after}");
                // Going deep again works: fresh pages.
                assert_eq!(deep(64), deep(64));
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
