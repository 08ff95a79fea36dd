//! The chrome around the panes: the sidebar (workspaces and their tabs), the tab bar, the
//! status line and the help overlay. `chrome_signature` names every input these read, so
//! an unchanged signature means unchanged chrome.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use super::view::{
    machine_entries, sidebar_entries, tab_agent_state, tab_bar_area, tab_bar_items, tab_label,
    title_of, MachineEntry, Overlay, Panel, SidebarEntry, View, ACCENT, MUTED, SIDEBAR_FIRST_ROW,
};
use crate::model::state::shown_agent_state;

/// The inputs of the sidebar, tab bar and status line, written into `sig` (cleared first).
/// Must name everything `draw_sidebar`, `draw_tab_bar` and `draw_status` read. Computed for
/// every frame, so for every echoed keystroke: written as raw fields, with nothing
/// formatted or allocated per tab (formatting it cost more than drawing the frame once
/// there were a few dozen tabs).
pub(super) fn chrome_signature(view: &View<'_>, size: (u16, u16), sig: &mut Vec<u8>) {
    sig.clear();
    let mut s = Sig(sig);
    let st = view.state;
    s.text(view.session);
    s.num(u64::from(size.0));
    s.num(u64::from(size.1));
    s.num(u64::from(view.sidebar));
    s.num(match view.overlay {
        Overlay::None => 0,
        Overlay::Prefix => 1,
        Overlay::Help => 2,
        Overlay::Panel => 3,
    });
    {
        use std::io::Write;
        let _ = write!(s.0, "{:?}", view.bindings.prefix);
    }
    s.opt(view.message);
    s.opt(view.clock.as_deref());
    s.text(view.host);
    for item in view.status {
        s.text(item);
    }
    for m in view.machines {
        s.text(&m.name);
        s.text(m.state);
        s.num(m.waiting as u64);
        for ws in &m.workspaces {
            s.text(&ws.name);
            s.num(ws.waiting as u64);
            for tab in &ws.tabs {
                s.text(&tab.label);
            }
        }
    }
    s.num(st.active as u64);
    for ws in &st.workspaces {
        s.num(u64::from(ws.no.0));
        s.text(&ws.name);
        s.num(ws.active as u64);
        s.num(ws.tabs.len() as u64);
        for tab in &ws.tabs {
            s.num(u64::from(tab.no.0));
            s.num(u64::from(tab.zoomed));
            // What `tab_label` makes of the tab: its name, else its focused terminal's
            // title; and its badge, which the agents' states below decide.
            s.opt(tab.name.as_deref());
            // Each pane looked up once: its number and title when focused; its agent and
            // agent state when it has one (the sidebar lists those under the tab).
            tab.layout.for_each_pane(|p| {
                let Some(ps) = st.panes.get(&p) else {
                    return;
                };
                let term = st.terminals.get(&ps.terminal);
                if p == tab.focused {
                    s.0.push(b'F');
                    s.num(u64::from(ps.no.0));
                    s.text(term.map_or("", |t| title_of(t)));
                }
                if ps.bell {
                    s.0.push(b'B');
                    s.num(u64::from(p.0));
                }
                if let Some(state) = term.and_then(|t| shown_agent_state(ps, t)) {
                    s.0.push(b'A');
                    s.num(u64::from(p.0));
                    s.opt(term.and_then(|t| t.agent.as_deref()));
                    s.text(state);
                }
            });
            s.0.push(b'T');
        }
    }
    let scrolling = st
        .focused_terminal()
        .is_some_and(|t| view.scroll.contains_key(&t));
    s.num(u64::from(scrolling));
}

/// Writes fields so that different inputs give different bytes: numbers at a fixed width,
/// texts after their length, and a tag byte before each optional entry and after each tab.
struct Sig<'a>(&'a mut Vec<u8>);

impl Sig<'_> {
    fn num(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    fn text(&mut self, t: &str) {
        self.num(t.len() as u64);
        self.0.extend_from_slice(t.as_bytes());
    }

    fn opt(&mut self, t: Option<&str>) {
        match t {
            Some(t) => {
                self.0.push(1);
                self.text(t);
            }
            None => self.0.push(0),
        }
    }
}

/// Blanks the sidebar, tab bar and status line before they are drawn again.
/// The chrome's cells, row by row: the top and bottom rows whole, the sidebar's columns
/// of the rows between.
pub(super) fn chrome_cells(
    size: (u16, u16),
    sidebar: u16,
) -> impl Iterator<Item = (u16, u16)> + Clone {
    let (cols, rows) = size;
    (0..rows).flat_map(move |y| {
        let width = if y == 0 || y + 1 == rows {
            cols
        } else {
            sidebar.min(cols)
        };
        (0..width).map(move |x| (x, y))
    })
}

pub(super) fn clear_chrome(buf: &mut Buffer, size: (u16, u16), sidebar: u16) {
    for (x, y) in chrome_cells(size, sidebar) {
        if let Some(c) = buf.cell_mut((x, y)) {
            c.reset();
        }
    }
}

pub(super) fn draw_sidebar(view: &View<'_>, buf: &mut Buffer, size: (u16, u16)) {
    let w = view.sidebar.min(size.0);
    if w < 2 {
        return;
    }
    let height = size.1.saturating_sub(1);
    let text_w = usize::from(w - 2);
    let put = |buf: &mut Buffer, y: u16, text: &str, style: Style| {
        if y < height {
            let line: String = text.chars().take(text_w).collect();
            buf.set_string(1, y, line, style);
        }
    };
    put(
        buf,
        0,
        &format!("herdr · {}", view.session),
        Style::default().fg(ACCENT).add_modifier(Modifier::BOLD),
    );
    let entries = sidebar_entries(view.state);
    for (i, entry) in entries.iter().enumerate() {
        let y = SIDEBAR_FIRST_ROW + i as u16;
        match entry {
            SidebarEntry::Workspace(wi) => {
                let ws = &view.state.workspaces[*wi];
                let active = *wi == view.state.active;
                let style = if active {
                    Style::default()
                        .fg(Color::Black)
                        .bg(ACCENT)
                        .add_modifier(Modifier::BOLD)
                } else {
                    Style::default().add_modifier(Modifier::BOLD)
                };
                // A workspace with an agent waiting for the user is marked.
                let waiting = ws
                    .tabs
                    .iter()
                    .any(|t| tab_agent_state(view.state, t) == Some("blocked"));
                let mark = if waiting { '!' } else { ' ' };
                let text = format!(
                    "{}{mark}{:<width$}",
                    wi + 1,
                    ws.name,
                    width = text_w.saturating_sub(3)
                );
                put(buf, y, &text, style);
            }
            SidebarEntry::Tab(wi, ti) => {
                let ws = &view.state.workspaces[*wi];
                let tab = &ws.tabs[*ti];
                let current = *ti == ws.active;
                let mark = if current { "›" } else { " " };
                let label = tab_label(view.state, tab);
                let style = if current && *wi == view.state.active {
                    Style::default().fg(ACCENT)
                } else {
                    Style::default().fg(MUTED)
                };
                put(buf, y, &format!(" {mark}{}:{label}", ti + 1), style);
            }
            SidebarEntry::Agent(_, _, pane) => {
                let st = view.state;
                let agent = st
                    .panes
                    .get(pane)
                    .and_then(|ps| st.terminals.get(&ps.terminal))
                    .and_then(|t| {
                        (t.agent.as_deref()).or(t.mirrored_agent.as_ref().map(|m| m.0.as_str()))
                    })
                    .unwrap_or("agent");
                let state = st.agent_state(*pane).unwrap_or("");
                let no = st.panes.get(pane).map_or(0, |p| p.no.0);
                let text = format!("   {} {agent} {state} p{no}", state_mark(state));
                put(buf, y, &text, Style::default().fg(state_colour(state)));
            }
        }
    }
    let first = usize::from(SIDEBAR_FIRST_ROW) + entries.len();
    for (i, entry) in machine_entries(view.machines).into_iter().enumerate() {
        // (Rows past the sidebar's end are not drawn.)
        let Some(y) = u16::try_from(first + i).ok().filter(|y| *y < height) else {
            break;
        };
        let (mi, wi) = match entry {
            MachineEntry::Gap => continue,
            MachineEntry::Machine(m) => (m, None),
            MachineEntry::Workspace(m, w) | MachineEntry::Tab(m, w, _) => (m, Some(w)),
        };
        let m = &view.machines[mi];
        // A machine that is not connected is dimmed: what it shows is as last seen.
        let live = m.state == "connected";
        let dim = |s: Style| {
            if live {
                s
            } else {
                s.add_modifier(Modifier::DIM)
            }
        };
        let ws = wi.map(|w| &m.workspaces[w]);
        let (text, style) = match (entry, ws) {
            (MachineEntry::Tab(_, _, t), Some(ws)) => (
                format!("   {}:{}", t + 1, ws.tabs[t].label),
                Style::default().fg(MUTED),
            ),
            (_, Some(ws)) => {
                let text = match ws.waiting {
                    0 => format!("  {}", ws.name),
                    n => format!("  {} ! {n} waiting", ws.name),
                };
                let colour = if ws.waiting > 0 { Color::Yellow } else { MUTED };
                (text, Style::default().fg(colour))
            }
            (_, None) => {
                let mark = if m.waiting > 0 { '!' } else { ' ' };
                let head = match live {
                    true => format!("@{mark}{}", m.name),
                    false => format!("@{mark}{} · {}", m.name, m.state),
                };
                (head, Style::default().add_modifier(Modifier::BOLD))
            }
        };
        put(buf, y, &text, dim(style));
    }
    for y in 0..height {
        if let Some(c) = buf.cell_mut((w - 1, y)) {
            c.set_symbol("│").set_style(Style::default().fg(MUTED));
        }
    }
}

/// The mark drawn before an agent's state.
fn state_mark(state: &str) -> char {
    match state {
        "blocked" => '!',
        "done" => '✓',
        "working" => '●',
        _ => '○',
    }
}

/// The colour of an agent's state: what needs the user stands out.
pub(super) fn state_colour(state: &str) -> Color {
    match state {
        "blocked" => Color::Yellow,
        "done" => Color::Green,
        "working" => Color::Cyan,
        _ => MUTED,
    }
}

pub(super) fn draw_tab_bar(view: &View<'_>, buf: &mut Buffer, size: (u16, u16)) {
    let area = tab_bar_area(size, view.sidebar);
    if area.height == 0 || size.1 < 3 {
        return;
    }
    let active = view.state.active_workspace().map(|w| w.active).unwrap_or(0);
    for (rect, i, text) in tab_bar_items(view, area) {
        let style = if i == active {
            Style::default()
                .fg(Color::Black)
                .bg(ACCENT)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(Color::Gray)
        };
        let t: String = text.chars().take(usize::from(rect.width)).collect();
        buf.set_string(rect.x, rect.y, t, style);
    }
}

pub(super) fn draw_status(view: &View<'_>, buf: &mut Buffer, size: (u16, u16)) {
    let y = size.1 - 1;
    let base = Style::default().fg(Color::Black).bg(ACCENT);
    for x in 0..size.0 {
        if let Some(c) = buf.cell_mut((x, y)) {
            c.reset();
            c.set_style(base);
        }
    }
    let (left, right) = status_text(view, view.message.is_some());
    let mut x = buf.set_stringn(0, y, &left, usize::MAX, base).0;
    if view.overlay == Overlay::Prefix {
        x = buf
            .set_stringn(
                x + 1,
                y,
                " PREFIX ",
                usize::MAX,
                Style::default()
                    .fg(Color::White)
                    .bg(Color::Blue)
                    .add_modifier(Modifier::BOLD),
            )
            .0;
    }
    let copying = copying(view);
    if copying {
        x = buf
            .set_stringn(
                x + 1,
                y,
                " SCROLL ",
                usize::MAX,
                Style::default().fg(Color::Black).bg(Color::Yellow),
            )
            .0;
    }
    let hint = format!("{right}{} ? help ", view.bindings.prefix);
    let hint_w = hint.chars().count() as u16;
    // Copy mode's keys where a message would go, while there is none.
    let keys = "q:exit v V ^v:select /?:search n N y:copy";
    if let Some(msg) = view.message.or(copying.then_some(keys)) {
        // A space before the hint too, so a long message never runs into it.
        let room = size.0.saturating_sub(x + 3 + hint_w);
        let msg = fit(msg, usize::from(room));
        buf.set_string(x + 2, y, msg, base.add_modifier(Modifier::BOLD));
    }
    if size.0 > hint_w + x {
        buf.set_string(size.0 - hint_w, y, hint, base);
    }
}

/// The status line's own text, by the `status` items: on the left the session, the host
/// and the focused tab's title (and whether it is zoomed); on the right how many agents
/// wait and the time.
fn status_text(view: &View<'_>, message: bool) -> (String, String) {
    let (mut left, mut right) = (String::new(), String::new());
    for item in view.status {
        match item.as_str() {
            // A message takes the room of the host and the title while it shows.
            "host" | "title" if message => {}
            "session" => left.push_str(&format!(" [{}]", view.session)),
            "host" if !view.host.is_empty() => left.push_str(&format!(" {}", view.host)),
            "title" => {
                if let Some(tab) = view.state.active_tab() {
                    let title = view
                        .state
                        .panes
                        .get(&tab.focused)
                        .map(|p| super::view::terminal_title(view.state, p.terminal));
                    let title = tab.name.clone().or(title).unwrap_or_default();
                    left.push_str(&format!(" · {title}"));
                }
            }
            "agents" => {
                let waiting = view.state.agents_waiting();
                if waiting > 0 {
                    let s = if waiting == 1 { "" } else { "s" };
                    right.push_str(&format!("{waiting} agent{s} waiting · "));
                }
            }
            "clock" => {
                if let Some(c) = &view.clock {
                    right.push_str(&format!("{c} · "));
                }
            }
            _ => {}
        }
    }
    if view.state.active_tab().is_some_and(|t| t.zoomed) {
        left.push_str(" (zoomed)");
    }
    (left, right)
}

/// The first line of `text` in at most `room` columns: cut with an ellipsis when longer.
fn fit(text: &str, room: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let line = text.lines().next().unwrap_or("");
    let width = |s: &str| s.chars().map(|c| c.width().unwrap_or(0)).sum::<usize>();
    if width(line) <= room && line.len() == text.trim_end().len() {
        return line.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > room {
            break;
        }
        out.push(c);
        used += w;
    }
    if room > 0 {
        out.push('…');
    }
    out
}

/// Whether the focused pane is in copy mode.
fn copying(view: &View<'_>) -> bool {
    view.state
        .focused_terminal()
        .is_some_and(|t| view.scroll.contains_key(&t))
}

/// The help: herdr's keys after the prefix, and copy mode's keys first while the focused
/// pane is in copy mode. Returns where it drew.
pub(super) fn draw_help(view: &View<'_>, buf: &mut Buffer, size: (u16, u16)) -> Option<Rect> {
    let rows = view.bindings.help_rows();
    let copy = copying(view).then_some(crate::model::copy::KEYS);
    let key_w = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .chain(
            copy.unwrap_or_default()
                .iter()
                .map(|(k, _)| k.chars().count()),
        )
        .max()
        .unwrap_or(0)
        .min(20);
    let prefix_line = format!("Press {} then:", view.bindings.prefix);
    let mut entries: Vec<String> = Vec::new();
    let heading = match copy {
        Some(keys) => {
            entries.extend(keys.iter().map(|(k, what)| format!("{k:<key_w$}  {what}")));
            entries.push(String::new());
            entries.push(prefix_line);
            "In copy mode:".to_string()
        }
        None => prefix_line,
    };
    entries.extend(rows.iter().map(|(k, what)| format!("{k:<key_w$}  {what}")));
    let entry_w = entries.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    // Room for the entries inside the border, the heading line and the footer line.
    let room = usize::from(size.1.saturating_sub(1)).saturating_sub(4);
    let two = (entry_w * 2 + 3 + 4) <= usize::from(size.0);
    let columns = if entries.len() > room && two { 2 } else { 1 };
    let per_column = entries.len().div_ceil(columns);
    let mut body: Vec<String> = (0..per_column)
        .map(|r| {
            let left = entries.get(r).cloned().unwrap_or_default();
            match entries.get(r + per_column).filter(|_| columns == 2) {
                Some(right) => format!("{left:<entry_w$}   {right}"),
                None => left,
            }
        })
        .collect();
    // Still too long: scrolled (j/k), with a note of where it is.
    let scrolled = body.len() > room;
    let footer = if scrolled {
        let first = view.help_scroll.min(body.len() - room);
        body = body[first..first + room].to_vec();
        format!(
            "j/k scroll ({}-{} of {}) · other keys close",
            first + 1,
            first + room,
            per_column
        )
    } else {
        "(any key closes this help)".to_string()
    };
    let lines: Vec<String> = std::iter::once(heading)
        .chain(body)
        .chain(std::iter::once(footer))
        .collect();
    draw_box(buf, size, " herdr keys ", &lines, None)
}

/// A [`Panel`]: its rows (scrolled to keep the chosen one in sight when they do not fit),
/// the chosen one highlighted, then its footer. Returns where it drew.
pub(super) fn draw_panel(panel: &Panel, buf: &mut Buffer, size: (u16, u16)) -> Option<Rect> {
    let room = usize::from(size.1.saturating_sub(1))
        .saturating_sub(3)
        .max(1);
    let selected = panel.selected.unwrap_or(0);
    let first = selected
        .saturating_sub(room - 1)
        .min(panel.rows.len().saturating_sub(room));
    let shown = panel.rows.iter().skip(first).take(room);
    let lines: Vec<String> = shown
        .cloned()
        .chain(std::iter::once(panel.footer.clone()))
        .collect();
    let highlight = panel.selected.map(|s| s - first);
    draw_box(buf, size, &format!(" {} ", panel.title), &lines, highlight)
}

/// A box in the middle of the screen (above the status line) with `title` on its top
/// edge and `lines` inside, line `highlight` in reverse video. Returns where it drew.
fn draw_box(
    buf: &mut Buffer,
    size: (u16, u16),
    title: &str,
    lines: &[String],
    highlight: Option<usize>,
) -> Option<Rect> {
    let inner_w = lines
        .iter()
        .map(|l| l.chars().count())
        .chain(std::iter::once(title.chars().count()))
        .max()
        .unwrap_or(0) as u16;
    let w = (inner_w + 4).min(size.0);
    let h = (lines.len() as u16 + 2).min(size.1.saturating_sub(1));
    if w < 4 || h < 3 {
        return None;
    }
    let x0 = (size.0 - w) / 2;
    let y0 = (size.1.saturating_sub(1) - h) / 2;
    let style = Style::default().fg(Color::White).bg(Color::Black);
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.reset();
                let edge_y = y == y0 || y == y0 + h - 1;
                let edge_x = x == x0 || x == x0 + w - 1;
                let sym = match (edge_x, edge_y) {
                    (true, true) => {
                        if y == y0 && x == x0 {
                            "┌"
                        } else if y == y0 {
                            "┐"
                        } else if x == x0 {
                            "└"
                        } else {
                            "┘"
                        }
                    }
                    (true, false) => "│",
                    (false, true) => "─",
                    _ => " ",
                };
                c.set_symbol(sym).set_style(style.fg(ACCENT));
            }
        }
    }
    buf.set_string(
        x0 + 2,
        y0,
        title,
        style.fg(ACCENT).add_modifier(Modifier::BOLD),
    );
    for (i, line) in lines.iter().enumerate().take(usize::from(h - 2)) {
        let width = usize::from(w - 4);
        let text: String = line.chars().take(width).collect();
        let y = y0 + 1 + i as u16;
        if highlight == Some(i) {
            let padded = format!("{text:<width$}");
            buf.set_string(x0 + 2, y, padded, style.add_modifier(Modifier::REVERSED));
        } else {
            buf.set_string(x0 + 2, y, text, style);
        }
    }
    Some(Rect::new(x0, y0, w, h))
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn a_message_too_long_ends_with_an_ellipsis_within_its_room() {
        assert_eq!(fit("config reloaded", 20), "config reloaded");
        assert_eq!(fit("config: 3 problems", 10), "config: 3…");
        assert_eq!(fit("first\nsecond", 20), "first…");
        assert_eq!(fit("✓✓✓✓", 5), "✓✓✓✓");
        assert_eq!(fit("abc", 0), "");
    }
}
