//! Grapheme clusters: whether a character extends the cluster in the cell before the
//! cursor (Unicode's extended grapheme cluster rules, from `unicode-segmentation`), and
//! how wide the cluster is then.
//!
//! The terminal sees characters one at a time, possibly across reads, and keeps no state
//! of its own for this: the cell's text is the cluster so far (a character that did not
//! fit is remembered beside it, see `Spill`), so the answer is the same however the
//! output was cut, and after a live handoff, which carries the cells.
//!
//! Width, as modern terminals draw a cluster (ghostty, kitty, wezterm in mode 2027): the
//! width of its first character, made 2 by an emoji presentation selector (VS16), an
//! emoji modifier (skin tone), a second regional indicator (a flag) or a pictograph
//! joined by ZWJ, and 1 by a text presentation selector (VS15) on a character that has a
//! text form.

use unicode_segmentation::GraphemeCursor;
use unicode_width::UnicodeWidthStr as _;

const ZWJ: char = '\u{200d}';
const VS15: char = '\u{fe0e}';
const VS16: char = '\u{fe0f}';

/// The characters given to a cell that had no room left for them: the end of the real
/// cluster still decides what joins it next. Valid while that cell keeps the same text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spill {
    pub alt: bool,
    pub row: u16,
    pub col: u16,
    /// The cell's text length when the characters were dropped.
    pub len: usize,
    /// The cluster's last characters (whole ones, at most `TAIL` bytes).
    tail: [u8; TAIL],
    tail_len: u8,
}

/// Bytes of a cluster's end kept beside a full cell: enough for every rule (an emoji, its
/// modifiers and selectors, and the joiner after them).
const TAIL: usize = 32;

impl Spill {
    /// `c` did not fit into the cell at (`row`, `col`) holding `text`; `before` is the
    /// spill there before, if any.
    pub fn new(before: Option<Spill>, alt: bool, row: u16, col: u16, text: &str, c: char) -> Spill {
        let mut s = Spill {
            alt,
            row,
            col,
            len: text.len(),
            tail: [0; TAIL],
            tail_len: 0,
        };
        let mut buf = [0u8; 4];
        let c = c.encode_utf8(&mut buf);
        let old = before.as_ref().map_or(text, Spill::tail);
        // Whole characters from the end that fit beside `c`.
        let room = TAIL - c.len();
        let mut from = old.len().saturating_sub(room);
        while !old.is_char_boundary(from) {
            from += 1;
        }
        let keep = &old.as_bytes()[from..];
        s.tail[..keep.len()].copy_from_slice(keep);
        s.tail[keep.len()..keep.len() + c.len()].copy_from_slice(c.as_bytes());
        s.tail_len = (keep.len() + c.len()) as u8;
        s
    }

    /// The cluster's last characters.
    pub fn tail(&self) -> &str {
        std::str::from_utf8(&self.tail[..usize::from(self.tail_len)]).unwrap_or("")
    }
}

/// Whether `c` continues the cluster that ends with `text` (the cell's text, or the end
/// of a cluster too long for its cell).
pub(super) fn joins(text: &str, c: char) -> bool {
    let Some(last) = text.chars().next_back() else {
        return false;
    };
    if !may_join(last, c) {
        return false;
    }
    let mut buf = [0u8; 64];
    let n = text.len() + c.len_utf8();
    if n > buf.len() {
        return false;
    }
    buf[..text.len()].copy_from_slice(text.as_bytes());
    c.encode_utf8(&mut buf[text.len()..]);
    let Ok(s) = std::str::from_utf8(&buf[..n]) else {
        return false;
    };
    let mut cursor = GraphemeCursor::new(text.len(), s.len(), true);
    matches!(cursor.is_boundary(s, 0), Ok(false))
}

/// False when `c` surely begins a new cluster after `last`: both are characters no rule
/// joins to anything (most text: Latin, Greek, Cyrillic, CJK, kana, box drawing), so
/// most characters cost no lookup of the rules. (Controls break on both sides too.)
#[inline]
pub(super) fn may_join(last: char, c: char) -> bool {
    !(stands_alone(last) && stands_alone(c))
}

/// A character that neither extends nor is extended, prepends, joins or pairs with the
/// characters around it (Grapheme_Cluster_Break=Other, or Control); and Hangul
/// syllables, which join only jamo (never one another). The commonest first.
#[inline]
fn stands_alone(c: char) -> bool {
    let u = u32::from(c);
    if u < 0x300 || (0x3400..=0x9fff).contains(&u) || (0xac00..=0xd7a3).contains(&u) {
        return true;
    }
    matches!(u,
        0x370..=0x482 | 0x48a..=0x52f | 0x2010..=0x2027 | 0x2030..=0x205e | 0x2190..=0x2bff
        | 0x3001..=0x3029 | 0x3030..=0x3098 | 0x309b..=0x30ff | 0xf900..=0xfaff
        | 0xff01..=0xff9d | 0x20000..=0x3fffd)
}

/// Whether the cluster that starts with `first`, ends with `last` and is `wide` now, is
/// wide once `c` joins it; `single_ri`: it is one regional indicator so far.
pub(super) fn wide_after(first: char, last: char, c: char, wide: bool, single_ri: bool) -> bool {
    match c {
        VS16 => wide || pair_width(first, VS16) > 1,
        VS15 => wide && pair_width(first, VS15) > 1,
        '\u{1f3fb}'..='\u{1f3ff}' => true,
        _ if single_ri && is_regional_indicator(c) => true,
        _ if last == ZWJ && is_pictographic(c) => true,
        _ => wide,
    }
}

/// The width of `base` followed by a variation selector.
fn pair_width(base: char, selector: char) -> usize {
    let mut buf = [0u8; 8];
    let n = base.encode_utf8(&mut buf).len();
    let m = selector.encode_utf8(&mut buf[n..]).len();
    std::str::from_utf8(&buf[..n + m]).map_or(1, |s| s.width())
}

pub(super) fn is_regional_indicator(c: char) -> bool {
    ('\u{1f1e6}'..='\u{1f1ff}').contains(&c)
}

/// Emoji and pictographs (approximately Unicode's Extended_Pictographic: the blocks it
/// is drawn from): what a ZWJ joins into an emoji sequence.
fn is_pictographic(c: char) -> bool {
    matches!(c,
        '\u{a9}' | '\u{ae}' | '\u{203c}' | '\u{2049}' | '\u{2122}' | '\u{2139}'
        | '\u{2194}'..='\u{2199}' | '\u{21a9}'..='\u{21aa}' | '\u{231a}'..='\u{23ff}'
        | '\u{24c2}' | '\u{25aa}'..='\u{27bf}' | '\u{2934}'..='\u{2935}'
        | '\u{2b05}'..='\u{2b55}' | '\u{3030}' | '\u{303d}' | '\u{3297}' | '\u{3299}'
        | '\u{1f000}'..='\u{1faff}' | '\u{1fc00}'..='\u{1fffd}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_joins_a_cluster() {
        let family = "\u{1f468}\u{200d}\u{1f469}";
        assert!(joins("\u{1f468}", ZWJ));
        assert!(joins("\u{1f468}\u{200d}", '\u{1f469}'));
        assert!(!joins(family, '\u{1f469}'), "no ZWJ between");
        assert!(joins("\u{1f1eb}", '\u{1f1f7}'), "two RIs make a flag");
        assert!(
            !joins("\u{1f1eb}\u{1f1f7}", '\u{1f1e9}'),
            "a third starts anew"
        );
        assert!(joins("\u{1f44d}", '\u{1f3fd}'), "skin tone");
        assert!(joins("e", '\u{301}'), "a mark after ASCII");
        assert!(joins("\u{2764}", VS16));
        assert!(joins("\u{1100}", '\u{1161}'), "jamo");
        assert!(!joins("a", 'b'));
        assert!(!joins("\u{6f22}", '\u{5b57}'));
        assert!(!joins("a\u{200b}", '\u{301}'), "after a control");
    }

    #[test]
    fn the_end_of_a_cluster_too_long_for_its_cell_is_kept_beside_it() {
        let text = "\u{1f468}\u{200d}\u{1f468}\u{200d}\u{1f468}\u{200d}";
        let s = Spill::new(None, false, 0, 0, text, '\u{1f468}');
        assert_eq!(s.tail(), format!("{text}\u{1f468}").as_str());
        let mut s = s;
        for _ in 0..10 {
            s = Spill::new(Some(s), false, 0, 0, text, ZWJ);
            s = Spill::new(Some(s), false, 0, 0, text, '\u{1f469}');
        }
        assert!(s.tail().len() <= TAIL && s.tail().ends_with("\u{200d}\u{1f469}"));
        assert!(!joins(s.tail(), '\u{1f467}'));
        assert!(joins(s.tail(), ZWJ));
    }

    #[test]
    fn characters_taken_to_stand_alone_never_join_by_the_rules() {
        // Every pair of them the shortcut judges is judged so by the rules too.
        let alone: Vec<char> = (0u32..0x40000)
            .filter_map(char::from_u32)
            .filter(|&c| !may_join(c, 'a'))
            .collect();
        let probes = [
            'a', '\u{e9}', '\u{3b1}', '\u{416}', '\u{4e00}', '\u{3042}', '\u{2500}', '\u{ac00}',
            '\u{d7a3}', '\u{ad6d}',
        ];
        for &c in &alone {
            for &p in &probes {
                for (x, y) in [(p, c), (c, p)] {
                    let mut s = String::from(x);
                    s.push(y);
                    let mut cursor = GraphemeCursor::new(x.len_utf8(), s.len(), true);
                    assert_eq!(cursor.is_boundary(&s, 0), Ok(true), "{x:?} {y:?}");
                }
            }
        }
    }

    #[test]
    fn how_wide_a_cluster_becomes() {
        assert!(wide_after('\u{2764}', '\u{2764}', VS16, false, false));
        assert!(!wide_after('a', 'a', VS16, false, false));
        assert!(!wide_after('\u{231a}', '\u{231a}', VS15, true, false));
        assert!(
            wide_after('\u{1f600}', '\u{1f600}', VS15, true, false),
            "no text form"
        );
        assert!(wide_after('a', 'a', '\u{1f3fd}', false, false));
        assert!(wide_after(
            '\u{1f1eb}',
            '\u{1f1eb}',
            '\u{1f1f7}',
            false,
            true
        ));
        assert!(wide_after('\u{1f3f3}', ZWJ, '\u{1f308}', false, false));
        assert!(
            !wide_after('\u{915}', ZWJ, '\u{937}', false, false),
            "a conjunct"
        );
        assert!(!wide_after('e', 'e', '\u{301}', false, false));
    }
}
