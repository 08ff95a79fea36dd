//! Hyperlinks (OSC 8), interned per terminal: a cell keeps a 16-bit id into this table,
//! never a string. The table is bounded in entries and bytes whatever a program prints:
//! when it is full, the ids no cell of either screen (nor the pen, nor the saved pen)
//! uses any more are reclaimed; when none can be, the new link is dropped (its text is
//! drawn without it).

use std::collections::HashMap;
use std::sync::Arc;

/// The most links a terminal keeps at once.
pub const MAX_LINKS: usize = 4096;
/// The most bytes of URIs and ids a terminal keeps at once.
const MAX_BYTES: usize = 1 << 20;
/// Longest URI taken, in bytes (as VTE and others; a longer one opens no link).
pub const MAX_URI: usize = 2048;
/// Longest `id=` parameter taken, in bytes.
const MAX_ID: usize = 256;
/// A scan that frees fewer ids than this is not repeated before the output moves on
/// (the next `process`): a program holding thousands of links on screen while it opens
/// more costs one scan per call, not one per link.
const SCAN_WORTH: usize = MAX_LINKS / 16;

/// Where a link points and the `id` that ties its cells together (empty: none given).
/// Both are printable ASCII (only [`Link::parse`] makes one), so they can be passed on
/// inside an OSC 8 as they are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Link {
    id: Box<str>,
    uri: Box<str>,
}

impl Link {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The link `OSC 8 ; params ; uri` opens: None for an empty URI (the link ends) and
    /// for one that is too long or holds bytes that are not printable ASCII (dropped, so
    /// it is never passed on to another terminal). Of the parameters, only `id` is kept.
    pub fn parse(params: &[u8], uri: &[u8]) -> Option<Link> {
        let printable = |s: &[u8]| s.iter().all(|b| (0x20..0x7f).contains(b));
        if uri.is_empty() || uri.len() > MAX_URI || !printable(uri) {
            return None;
        }
        let id = params
            .split(|&b| b == b':')
            .find_map(|p| p.strip_prefix(b"id="))
            .filter(|id| id.len() <= MAX_ID && printable(id))
            .unwrap_or_default();
        Some(Link {
            id: String::from_utf8_lossy(id).into(),
            uri: String::from_utf8_lossy(uri).into(),
        })
    }

    fn bytes(&self) -> usize {
        self.id.len() + self.uri.len()
    }

    /// The OSC 8 sequence that opens this link.
    pub(super) fn open(&self, out: &mut impl super::format::Sink) {
        out.put("\x1b]8;");
        if !self.id.is_empty() {
            out.put("id=");
            out.put(&self.id);
        }
        out.put(";");
        out.put(&self.uri);
        out.put("\x1b\\");
    }
}

/// The OSC 8 sequence that ends the open link.
pub const CLOSE: &str = "\x1b]8;;\x1b\\";

/// The links a terminal's cells point to, by id (ids from 1). Made when the first link
/// comes (most programs print none: an empty table was 120 bytes in every pane).
#[derive(Debug, Clone, Default)]
pub struct Links(Option<Box<Table>>);

impl Links {
    pub fn get(&self, id: u16) -> Option<&Arc<Link>> {
        self.0.as_ref()?.get(id)
    }

    /// How many links are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |t| t.ids.len())
    }

    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The id of `link`, added if new. When the table is full, `in_use` marks the ids
    /// still used (one flag per id, index 0 unused) so the others can be reclaimed; a scan
    /// at step `seq` that freed little is not repeated in that step. None: no room.
    pub fn intern(
        &mut self,
        link: Link,
        seq: u64,
        in_use: impl FnOnce(&mut [bool]),
    ) -> Option<u16> {
        self.0
            .get_or_insert_with(Default::default)
            .intern(link, seq, in_use)
    }

    /// Bytes of URIs and ids kept.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |t| t.bytes)
    }
}

#[derive(Debug, Clone, Default)]
struct Table {
    slots: Vec<Option<Arc<Link>>>,
    ids: HashMap<Arc<Link>, u16>,
    free: Vec<u16>,
    bytes: usize,
    /// The output step (`seq`) in which a scan last freed too little to be worth another.
    scanned: Option<u64>,
}

impl Table {
    fn get(&self, id: u16) -> Option<&Arc<Link>> {
        self.slots.get(usize::from(id).checked_sub(1)?)?.as_ref()
    }

    fn intern(&mut self, link: Link, seq: u64, in_use: impl FnOnce(&mut [bool])) -> Option<u16> {
        if let Some(&id) = self.ids.get(&link) {
            return Some(id);
        }
        let size = link.bytes();
        let full = |l: &Table| {
            (l.free.is_empty() && l.slots.len() >= MAX_LINKS) || l.bytes + size > MAX_BYTES
        };
        if full(self) {
            if self.scanned == Some(seq) {
                return None;
            }
            let mut used = vec![false; self.slots.len() + 1];
            in_use(&mut used);
            let freed = self.reclaim(&used);
            self.scanned = (freed < SCAN_WORTH).then_some(seq);
            if full(self) {
                return None;
            }
        }
        let link = Arc::new(link);
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[usize::from(id) - 1] = Some(link.clone());
                id
            }
            None => {
                self.slots.push(Some(link.clone()));
                self.slots.len() as u16
            }
        };
        self.bytes += size;
        self.ids.insert(link, id);
        Some(id)
    }

    /// Frees every id not marked in `used`; returns how many it freed.
    fn reclaim(&mut self, used: &[bool]) -> usize {
        let mut freed = 0;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let id = i as u16 + 1;
            if used.get(usize::from(id)).copied().unwrap_or(false) {
                continue;
            }
            if let Some(link) = slot.take() {
                self.bytes -= link.bytes();
                self.ids.remove(&link);
                self.free.push(id);
                freed += 1;
            }
        }
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(uri: &str) -> Link {
        Link::parse(b"", uri.as_bytes()).unwrap()
    }

    #[test]
    fn a_link_is_its_uri_and_id_and_bad_ones_are_refused() {
        let l = Link::parse(b"foo=bar:id=x1", b"https://example.com/a;b").unwrap();
        assert_eq!((&*l.id, &*l.uri), ("x1", "https://example.com/a;b"));
        assert_eq!(Link::parse(b"", b""), None, "an empty URI ends the link");
        assert!(Link::parse(b"", "x".repeat(MAX_URI).as_bytes()).is_some());
        assert_eq!(Link::parse(b"", "x".repeat(MAX_URI + 1).as_bytes()), None);
        assert_eq!(Link::parse(b"", b"http://a/\x1b[31m"), None);
        assert_eq!(Link::parse(b"", "http://\u{e9}".as_bytes()), None);
        let long_id = format!("id={}", "i".repeat(MAX_ID + 1));
        assert_eq!(&*Link::parse(long_id.as_bytes(), b"u").unwrap().id, "");
        let mut out = String::new();
        l.open(&mut out);
        assert_eq!(out, "\x1b]8;id=x1;https://example.com/a;b\x1b\\");
    }

    #[test]
    fn the_same_link_has_one_id() {
        let mut t = Links::default();
        let a = t.intern(link("a"), 0, |_| {}).unwrap();
        let b = t.intern(link("b"), 0, |_| {}).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.intern(link("a"), 0, |_| {}), Some(a));
        let with_id = Link::parse(b"id=1", b"a").unwrap();
        assert_ne!(t.intern(with_id, 0, |_| {}), Some(a));
        assert_eq!(t.get(a).map(|l| &*l.uri), Some("a"));
        assert_eq!(t.get(0), None);
    }

    #[test]
    fn a_million_links_stay_bounded_and_unused_ids_come_back() {
        let mut t = Links::default();
        // Every id stays in use: the table fills, then new links are dropped.
        let mut dropped = 0;
        for i in 0..1_000_000u64 {
            let uri = format!("https://example.com/{i}");
            // (A step of output holds many links.)
            if t.intern(link(&uri), i / 64, |used| used.fill(true))
                .is_none()
            {
                dropped += 1;
            }
        }
        assert_eq!(t.len(), MAX_LINKS);
        assert_eq!(dropped, 1_000_000 - MAX_LINKS);
        assert!(t.bytes() <= MAX_BYTES);
        // Only one id in use (as a screen showing one link): the rest come back.
        let keep =
            t.0.as_ref()
                .unwrap()
                .ids
                .get(&link("https://example.com/7"))
                .copied()
                .unwrap();
        for i in 0..1_000_000u64 {
            let uri = format!("https://example.org/{i}");
            let id = t.intern(link(&uri), i, |used| used[usize::from(keep)] = true);
            assert!(id.is_some(), "link {i}");
            assert_ne!(id, Some(keep));
        }
        assert!(t.len() <= MAX_LINKS);
        assert_eq!(t.get(keep).map(|l| &*l.uri), Some("https://example.com/7"));
        // Long URIs: the byte budget holds too.
        let mut t = Links::default();
        for i in 0..10_000u64 {
            let uri = format!("{i}{}", "u".repeat(MAX_URI - 8));
            t.intern(link(&uri), i, |used| used.fill(true));
        }
        assert!(t.bytes() <= MAX_BYTES, "{}", t.bytes());
    }

    #[test]
    fn a_scan_that_frees_little_waits_for_the_next_step() {
        let mut t = Links::default();
        for i in 0..MAX_LINKS {
            t.intern(link(&i.to_string()), 0, |_| {}).unwrap();
        }
        let mut scans = 0;
        for i in 0..100 {
            let fresh = link(&format!("new{i}"));
            let got = t.intern(fresh, 1, |used| {
                scans += 1;
                used.fill(true);
            });
            assert_eq!(got, None);
        }
        assert_eq!(scans, 1, "one scan in the step");
        t.intern(link("next"), 2, |used| {
            scans += 1;
            used.fill(false);
        })
        .unwrap();
        assert_eq!((scans, t.len()), (2, 1));
    }
}
