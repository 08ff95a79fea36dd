//! Control strings — OSC, DCS, SOS, PM and APC — taken beside the parser, so that what a
//! program sends in one costs bounded memory however long it is.
//!
//! A string begins and ends exactly where `vte` would begin and end it (the tests feed
//! both the same output), but only an OSC's text is kept, and at most [`OSC_MAX`] bytes of
//! it: a longer OSC is dropped whole when it ends, as a clipboard write cut short would
//! paste the wrong text. DCS, SOS, PM and APC strings are skipped as they arrive: herdr
//! acts on none of them. Nothing here allocates beyond the one OSC buffer, which is given
//! back once it grew past [`OSC_KEEP`].

/// The longest OSC kept, in bytes: an OSC 52 clipboard write of 1 MiB of base64 (the
/// most the terminal forwards) with its selector.
pub const OSC_MAX: usize = (1 << 20) + 64;

/// An OSC buffer that grew past this many bytes is freed when its string ends; titles,
/// working directories and colour queries fit well within it.
const OSC_KEEP: usize = 4 << 10;

/// Where in a string the output stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Str {
    /// An OSC's text, kept unless it passed [`OSC_MAX`] (`over`).
    Osc { over: bool },
    /// A DCS before its final byte.
    DcsHead(Head),
    /// A DCS whose head went wrong: skipped to the next CAN, SUB or ESC.
    DcsIgnore,
    /// A DCS's data, after its final byte; a raw 0x9c also ends it.
    DcsBody,
    /// SOS, PM and APC: skipped to the next CAN, SUB or ESC (BEL does not end them).
    Skip,
}

/// The part of a DCS before its final byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Head {
    Entry,
    Params,
    Intermediates,
}

/// How a string ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// By BEL (an OSC only).
    Bell,
    /// By CAN or SUB, which are then executed.
    Cancel(u8),
    /// By an ESC, which is not taken: it begins the next sequence (usually the `\` of ST).
    Escape,
    /// By a raw 0x9c (a DCS's data only).
    St,
}

const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;
const ESC: u8 = 0x1b;

impl Str {
    /// The string that `ESC <b>` begins, if any.
    pub(super) fn begin(b: u8) -> Option<Str> {
        match b {
            b']' => Some(Str::Osc { over: false }),
            b'P' => Some(Str::DcsHead(Head::Entry)),
            b'X' | b'^' | b'_' => Some(Str::Skip),
            _ => None,
        }
    }

    /// Takes the string's bytes from `bytes`, an OSC's text into `osc`. Returns how many
    /// bytes were taken and, if the string ended among them, how.
    pub(super) fn take(&mut self, bytes: &[u8], osc: &mut Vec<u8>) -> (usize, Option<End>) {
        let mut i = 0;
        while i < bytes.len() {
            match *self {
                Str::Osc { ref mut over } => {
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| b < 0x20)
                        .unwrap_or(bytes.len() - i);
                    if !*over {
                        if osc.len() + run > OSC_MAX {
                            *over = true;
                            osc.clear();
                        } else {
                            // Grown by doubling, but never past the limit.
                            let want = osc.len() + run;
                            if want > osc.capacity() {
                                osc.reserve_exact(want.max(osc.len() * 2).min(OSC_MAX) - osc.len());
                            }
                            osc.extend_from_slice(&bytes[i..i + run]);
                        }
                    }
                    i += run;
                    let Some(&b) = bytes.get(i) else { break };
                    match b {
                        0x07 => return (i + 1, Some(End::Bell)),
                        CAN | SUB => return (i + 1, Some(End::Cancel(b))),
                        ESC => return (i, Some(End::Escape)),
                        // Other controls inside an OSC are ignored.
                        _ => i += 1,
                    }
                }
                Str::DcsHead(head) => {
                    let b = bytes[i];
                    match (b, head) {
                        (CAN | SUB, _) => return (i + 1, Some(End::Cancel(b))),
                        (ESC, _) => return (i, Some(End::Escape)),
                        (0x20..=0x2f, _) => *self = Str::DcsHead(Head::Intermediates),
                        // Digits, `:` and `;`; a private marker (`<=>?`) only at the start.
                        (0x30..=0x3b, Head::Entry | Head::Params) | (0x3c..=0x3f, Head::Entry) => {
                            *self = Str::DcsHead(Head::Params)
                        }
                        (0x30..=0x3f, _) => *self = Str::DcsIgnore,
                        (0x40..=0x7e, _) => *self = Str::DcsBody,
                        _ => {}
                    }
                    i += 1;
                }
                Str::DcsIgnore | Str::Skip | Str::DcsBody => {
                    let body = *self == Str::DcsBody;
                    let Some(n) = bytes[i..]
                        .iter()
                        .position(|&b| matches!(b, CAN | SUB | ESC) || (body && b == 0x9c))
                    else {
                        return (bytes.len(), None);
                    };
                    i += n;
                    return match bytes[i] {
                        ESC => (i, Some(End::Escape)),
                        0x9c => (i + 1, Some(End::St)),
                        b => (i + 1, Some(End::Cancel(b))),
                    };
                }
            }
        }
        (bytes.len(), None)
    }

    /// Ends a string's use of `osc`: the buffer is emptied, and freed if it grew large.
    pub(super) fn release(osc: &mut Vec<u8>) {
        osc.clear();
        if osc.capacity() > OSC_KEEP {
            *osc = Vec::new();
        }
    }
}
