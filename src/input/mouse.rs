//! Mouse events: decoding the reports the user's terminal sends, and re-encoding them
//! for a program inside a pane that asked for mouse reporting.
//!
//! Invariants:
//! * Coordinates in [`MouseEvent`] are 0-based cells; the wire formats are 1-based.
//! * Decoding never panics and saturates out-of-range numbers instead of overflowing.
//! * [`encode_for_pane`] returns `None` rather than a wrong report: when the pane's mode
//!   does not want the event, or the encoding cannot express the coordinates.
//! * For SGR, decoding what [`encode_for_pane`] produced gives back the same event
//!   (for events a terminal can actually report).

use super::keys::Mods;
use crate::term::vt::{MouseProtocolEncoding, MouseProtocolMode};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MouseButton {
    Left,
    Middle,
    Right,
    WheelUp,
    WheelDown,
    WheelLeft,
    WheelRight,
    /// No button: plain motion, or an X10 release (that format does not say which
    /// button was released).
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MouseKind {
    Press,
    Release,
    /// Motion with a button held.
    Drag,
    /// Motion with no button held.
    Motion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MouseEvent {
    pub kind: MouseKind,
    pub button: MouseButton,
    /// 0-based column.
    pub x: u16,
    /// 0-based row.
    pub y: u16,
    /// Shift/alt/ctrl held during the event, as reported by the terminal.
    pub mods: Mods,
}

// Bits of the xterm button value ("Cb").
const MOTION: u32 = 32;
const WHEEL: u32 = 64;
const EXTRA: u32 = 128;
const MOD_SHIFT: u32 = 4;
const MOD_ALT: u32 = 8;
const MOD_CTRL: u32 = 16;

impl MouseEvent {
    /// Decodes an xterm button value `cb` (already without the X10 +32 offset) and
    /// 0-based coordinates. `release` is the SGR `m` final; X10 reports releases as
    /// button 3 instead. Returns `None` for buttons this type cannot represent
    /// (buttons 8–11).
    pub fn from_report(cb: u32, x: u16, y: u16, release: bool) -> Option<MouseEvent> {
        if cb & EXTRA != 0 || cb > 255 {
            return None;
        }
        let mut mods = Mods::NONE;
        for (bit, m) in [
            (MOD_SHIFT, Mods::SHIFT),
            (MOD_ALT, Mods::ALT),
            (MOD_CTRL, Mods::CTRL),
        ] {
            if cb & bit != 0 {
                mods |= m;
            }
        }
        let wheel = cb & WHEEL != 0;
        let button = match (wheel, cb & 3) {
            (true, 0) => MouseButton::WheelUp,
            (true, 1) => MouseButton::WheelDown,
            (true, 2) => MouseButton::WheelLeft,
            (true, _) => MouseButton::WheelRight,
            (false, 0) => MouseButton::Left,
            (false, 1) => MouseButton::Middle,
            (false, 2) => MouseButton::Right,
            (false, _) => MouseButton::None,
        };
        let kind = match (release, cb & MOTION != 0, button) {
            (true, _, _) => MouseKind::Release,
            // Wheel "motion" is not something terminals send; keep it a wheel press
            // so a scroll is never lost.
            (false, true, _) if wheel => MouseKind::Press,
            (false, true, MouseButton::None) => MouseKind::Motion,
            (false, true, _) => MouseKind::Drag,
            (false, false, MouseButton::None) => MouseKind::Release,
            (false, false, _) => MouseKind::Press,
        };
        Some(MouseEvent {
            kind,
            button,
            x,
            y,
            mods,
        })
    }

    /// Decodes SGR parameters (`b ; x ; y`, coordinates 1-based).
    pub fn from_sgr(b: u32, x: u32, y: u32, release: bool) -> Option<MouseEvent> {
        MouseEvent::from_report(b, wire_to_cell(x), wire_to_cell(y), release)
    }

    /// Decodes the three raw bytes after `ESC [ M` (each value + 32, coordinates 1-based).
    pub fn from_x10(cb: u8, cx: u8, cy: u8) -> Option<MouseEvent> {
        let coord = |b: u8| wire_to_cell(u32::from(b).saturating_sub(32));
        MouseEvent::from_report(
            u32::from(cb).saturating_sub(32),
            coord(cx),
            coord(cy),
            false,
        )
    }

    /// The button value for the wire without modifiers or the legacy release rule.
    fn button_value(&self) -> u32 {
        let base = match self.button {
            MouseButton::Left => 0,
            MouseButton::Middle => 1,
            MouseButton::Right => 2,
            MouseButton::None => 3,
            MouseButton::WheelUp => WHEEL,
            MouseButton::WheelDown => WHEEL + 1,
            MouseButton::WheelLeft => WHEEL + 2,
            MouseButton::WheelRight => WHEEL + 3,
        };
        let motion = match self.kind {
            MouseKind::Drag | MouseKind::Motion => MOTION,
            MouseKind::Press | MouseKind::Release => 0,
        };
        base + motion
    }
}

fn mods_value(m: Mods) -> u32 {
    let mut v = 0;
    for (bit, mm) in [
        (MOD_SHIFT, Mods::SHIFT),
        (MOD_ALT, Mods::ALT),
        (MOD_CTRL, Mods::CTRL),
    ] {
        if m.contains(mm) {
            v |= bit;
        }
    }
    v
}

/// 1-based wire coordinate to 0-based cell (0 is invalid on the wire; clamp it).
fn wire_to_cell(v: u32) -> u16 {
    u16::try_from(v.saturating_sub(1)).unwrap_or(u16::MAX)
}

fn is_wheel(b: MouseButton) -> bool {
    matches!(
        b,
        MouseButton::WheelUp
            | MouseButton::WheelDown
            | MouseButton::WheelLeft
            | MouseButton::WheelRight
    )
}

/// Encodes `ev` at pane-relative 0-based cell (`x`, `y`) the way a program that set
/// `mode`/`enc` expects, or `None` when it must not be sent. Mode filtering follows
/// xterm: `Press` (X10) wants presses only (wheel included) and no modifiers;
/// `PressRelease` adds releases; `ButtonMotion` adds drags; `AnyMotion` adds motion.
/// Wheel releases are never sent (xterm has none).
pub fn encode_for_pane(
    ev: &MouseEvent,
    x: u16,
    y: u16,
    mode: MouseProtocolMode,
    enc: MouseProtocolEncoding,
) -> Option<Vec<u8>> {
    let wanted = match mode {
        MouseProtocolMode::None => false,
        MouseProtocolMode::Press => ev.kind == MouseKind::Press,
        MouseProtocolMode::PressRelease => matches!(ev.kind, MouseKind::Press | MouseKind::Release),
        MouseProtocolMode::ButtonMotion => ev.kind != MouseKind::Motion,
        MouseProtocolMode::AnyMotion => true,
    };
    if !wanted || (ev.kind == MouseKind::Release && is_wheel(ev.button)) {
        return None;
    }
    // A press of "no button" is meaningless; do not invent one.
    if ev.kind == MouseKind::Press && ev.button == MouseButton::None {
        return None;
    }
    // X10 (Press) mode does not report modifiers.
    let mods = if mode == MouseProtocolMode::Press {
        0
    } else {
        mods_value(ev.mods)
    };
    let legacy_release = ev.kind == MouseKind::Release && enc != MouseProtocolEncoding::Sgr;
    // Legacy encodings report every release as button 3.
    let cb = if legacy_release { 3 } else { ev.button_value() } + mods;
    let (cx, cy) = (u32::from(x) + 1, u32::from(y) + 1);
    match enc {
        MouseProtocolEncoding::Sgr => {
            let fin = if ev.kind == MouseKind::Release {
                'm'
            } else {
                'M'
            };
            Some(format!("\x1b[<{cb};{cx};{cy}{fin}").into_bytes())
        }
        MouseProtocolEncoding::Default | MouseProtocolEncoding::Utf8 => {
            let mut out = b"\x1b[M".to_vec();
            for v in [cb, cx, cy] {
                let v = v + 32;
                if enc == MouseProtocolEncoding::Default {
                    out.push(u8::try_from(v).ok()?);
                } else {
                    // xterm's UTF-8 mode stops at 2047 (two-byte sequences).
                    if v > 0x7ff {
                        return None;
                    }
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(char::from_u32(v)?.encode_utf8(&mut buf).as_bytes());
                }
            }
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MouseProtocolEncoding as Enc;
    use MouseProtocolMode as Mode;

    fn ev(kind: MouseKind, button: MouseButton, mods: Mods) -> MouseEvent {
        MouseEvent {
            kind,
            button,
            x: 4,
            y: 9,
            mods,
        }
    }
    const ALL_MODES: [Mode; 5] = [
        Mode::None,
        Mode::Press,
        Mode::PressRelease,
        Mode::ButtonMotion,
        Mode::AnyMotion,
    ];

    #[test]
    fn decodes_button_values() {
        let d =
            |cb, rel| MouseEvent::from_report(cb, 1, 2, rel).map(|e| (e.kind, e.button, e.mods));
        use MouseButton as B;
        use MouseKind as K;
        assert_eq!(d(0, false), Some((K::Press, B::Left, Mods::NONE)));
        assert_eq!(d(1, false), Some((K::Press, B::Middle, Mods::NONE)));
        assert_eq!(d(2, true), Some((K::Release, B::Right, Mods::NONE)));
        assert_eq!(d(3, false), Some((K::Release, B::None, Mods::NONE)));
        assert_eq!(d(32, false), Some((K::Drag, B::Left, Mods::NONE)));
        assert_eq!(d(35, false), Some((K::Motion, B::None, Mods::NONE)));
        assert_eq!(d(64, false), Some((K::Press, B::WheelUp, Mods::NONE)));
        assert_eq!(d(65, false), Some((K::Press, B::WheelDown, Mods::NONE)));
        assert_eq!(d(66, false), Some((K::Press, B::WheelLeft, Mods::NONE)));
        assert_eq!(d(67, false), Some((K::Press, B::WheelRight, Mods::NONE)));
        assert_eq!(
            d(4 + 8 + 16, false),
            Some((K::Press, B::Left, Mods::SHIFT | Mods::ALT | Mods::CTRL))
        );
        assert_eq!(d(16 + 32 + 2, false), Some((K::Drag, B::Right, Mods::CTRL)));
        assert_eq!(d(128, false), None);
        assert_eq!(d(u32::MAX, false), None);
    }

    #[test]
    fn decodes_wire_coordinates() {
        let e = MouseEvent::from_sgr(0, 1, 1, false).unwrap();
        assert_eq!((e.x, e.y), (0, 0));
        let e = MouseEvent::from_sgr(0, 0, u32::MAX, false).unwrap();
        assert_eq!((e.x, e.y), (0, u16::MAX));
        let e = MouseEvent::from_x10(32, 33 + 10, 33 + 5).unwrap();
        assert_eq!(
            (e.kind, e.button, e.x, e.y),
            (MouseKind::Press, MouseButton::Left, 10, 5)
        );
        let e = MouseEvent::from_x10(0, 0, 255).unwrap(); // below the offset: clamped
        assert_eq!((e.x, e.y), (0, 222));
    }

    #[test]
    fn mode_filtering() {
        use MouseButton as B;
        use MouseKind as K;
        let cases = [
            (
                ev(K::Press, B::Left, Mods::NONE),
                [false, true, true, true, true],
            ),
            (
                ev(K::Press, B::WheelUp, Mods::NONE),
                [false, true, true, true, true],
            ),
            (
                ev(K::Release, B::Left, Mods::NONE),
                [false, false, true, true, true],
            ),
            (
                ev(K::Release, B::WheelUp, Mods::NONE),
                [false, false, false, false, false],
            ),
            (
                ev(K::Drag, B::Left, Mods::NONE),
                [false, false, false, true, true],
            ),
            (
                ev(K::Motion, B::None, Mods::NONE),
                [false, false, false, false, true],
            ),
            (
                ev(K::Press, B::None, Mods::NONE),
                [false, false, false, false, false],
            ),
        ];
        for (e, want) in cases {
            for (mode, w) in ALL_MODES.into_iter().zip(want) {
                for enc in [Enc::Default, Enc::Utf8, Enc::Sgr] {
                    let got = encode_for_pane(&e, 1, 1, mode, enc);
                    assert_eq!(got.is_some(), w, "{e:?} {mode:?} {enc:?}");
                }
            }
        }
    }

    #[test]
    fn sgr_encoding() {
        use MouseButton as B;
        use MouseKind as K;
        let s = |e: MouseEvent, x, y| encode_for_pane(&e, x, y, Mode::AnyMotion, Enc::Sgr).unwrap();
        assert_eq!(s(ev(K::Press, B::Left, Mods::NONE), 0, 0), b"\x1b[<0;1;1M");
        assert_eq!(
            s(ev(K::Release, B::Right, Mods::NONE), 4, 9),
            b"\x1b[<2;5;10m"
        );
        assert_eq!(s(ev(K::Drag, B::Left, Mods::NONE), 4, 9), b"\x1b[<32;5;10M");
        assert_eq!(
            s(ev(K::Motion, B::None, Mods::NONE), 4, 9),
            b"\x1b[<35;5;10M"
        );
        assert_eq!(
            s(ev(K::Press, B::WheelUp, Mods::NONE), 4, 9),
            b"\x1b[<64;5;10M"
        );
        assert_eq!(
            s(ev(K::Press, B::WheelDown, Mods::NONE), 4, 9),
            b"\x1b[<65;5;10M"
        );
        assert_eq!(
            s(ev(K::Press, B::WheelLeft, Mods::NONE), 4, 9),
            b"\x1b[<66;5;10M"
        );
        assert_eq!(
            s(ev(K::Press, B::WheelRight, Mods::NONE), 4, 9),
            b"\x1b[<67;5;10M"
        );
        assert_eq!(
            s(ev(K::Press, B::Middle, Mods::SHIFT), 4, 9),
            b"\x1b[<5;5;10M"
        );
        assert_eq!(s(ev(K::Press, B::Left, Mods::ALT), 4, 9), b"\x1b[<8;5;10M");
        assert_eq!(s(ev(K::Drag, B::Left, Mods::CTRL), 4, 9), b"\x1b[<48;5;10M");
        assert_eq!(
            s(ev(K::Press, B::Left, Mods::NONE), 9999, 65535),
            b"\x1b[<0;10000;65536M"
        );
    }

    #[test]
    fn x10_and_utf8_encoding() {
        use MouseButton as B;
        use MouseKind as K;
        let x10 = |e: MouseEvent, x, y, mode| encode_for_pane(&e, x, y, mode, Enc::Default);
        let press = ev(K::Press, B::Left, Mods::CTRL);
        assert_eq!(
            x10(press, 0, 0, Mode::PressRelease).unwrap(),
            [0x1b, b'[', b'M', 32 + 16, 33, 33]
        );
        // X10 (Press) mode reports no modifiers.
        assert_eq!(
            x10(press, 0, 0, Mode::Press).unwrap(),
            [0x1b, b'[', b'M', 32, 33, 33]
        );
        let rel = ev(K::Release, B::Right, Mods::NONE);
        assert_eq!(
            x10(rel, 3, 4, Mode::PressRelease).unwrap(),
            [0x1b, b'[', b'M', 32 + 3, 36, 37]
        );
        let wheel = ev(K::Press, B::WheelDown, Mods::NONE);
        assert_eq!(
            x10(wheel, 1, 1, Mode::Press).unwrap(),
            [0x1b, b'[', b'M', 32 + 65, 34, 34]
        );
        let drag = ev(K::Drag, B::Middle, Mods::NONE);
        assert_eq!(
            x10(drag, 1, 1, Mode::ButtonMotion).unwrap(),
            [0x1b, b'[', b'M', 32 + 33, 34, 34]
        );
        // 222 is the last encodable coordinate (222 + 1 + 32 = 255).
        assert_eq!(
            x10(press, 222, 222, Mode::PressRelease).unwrap()[4..],
            [255, 255]
        );
        assert_eq!(x10(press, 223, 0, Mode::PressRelease), None);
        assert_eq!(x10(press, 0, 223, Mode::PressRelease), None);

        let utf8 = |e: MouseEvent, x, y| encode_for_pane(&e, x, y, Mode::AnyMotion, Enc::Utf8);
        assert_eq!(
            utf8(press, 0, 0).unwrap(),
            [0x1b, b'[', b'M', 32 + 16, 33, 33]
        );
        let mut want = b"\x1b[M ".to_vec();
        want.extend_from_slice("\u{12c}!".as_bytes()); // 267 + 33 = 300 = U+012C
        assert_eq!(
            utf8(ev(K::Press, B::Left, Mods::NONE), 267, 0).unwrap(),
            want
        );
        assert!(utf8(press, 2014, 0).is_some()); // 2014 + 33 = 2047
        assert_eq!(utf8(press, 2015, 0), None);
    }

    #[test]
    fn sgr_and_x10_round_trip() {
        use MouseButton as B;
        use MouseKind as K;
        let mut events = Vec::new();
        for bits in 0..8 {
            let m = Mods::from_bits(bits);
            for b in [B::Left, B::Middle, B::Right] {
                events.extend([ev(K::Press, b, m), ev(K::Release, b, m), ev(K::Drag, b, m)]);
            }
            for b in [B::WheelUp, B::WheelDown, B::WheelLeft, B::WheelRight] {
                events.push(ev(K::Press, b, m));
            }
            events.push(ev(K::Motion, B::None, m));
        }
        for e in events {
            let bytes = encode_for_pane(&e, e.x, e.y, Mode::AnyMotion, Enc::Sgr).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            let body = text.strip_prefix("\x1b[<").unwrap();
            let release = body.ends_with('m');
            let nums: Vec<u32> = body[..body.len() - 1]
                .split(';')
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(
                MouseEvent::from_sgr(nums[0], nums[1], nums[2], release),
                Some(e),
                "{text:?}"
            );
            // X10 loses only the released button's identity.
            let x = encode_for_pane(&e, e.x, e.y, Mode::AnyMotion, Enc::Default).unwrap();
            let back = MouseEvent::from_x10(x[3], x[4], x[5]).unwrap();
            let want = if e.kind == K::Release {
                MouseEvent {
                    button: B::None,
                    ..e
                }
            } else {
                e
            };
            assert_eq!(back, want);
        }
    }
}
