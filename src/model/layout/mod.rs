//! A tab's pane layout: a binary space partition (BSP) tree.
//!
//! Leaves are panes, inner nodes are splits with a direction and a ratio. Between the
//! two children of a split there is exactly one cell of divider (a column for
//! [`SplitDir::Right`], a row for [`SplitDir::Down`]); the renderer draws it.
//!
//! Invariants:
//! * the tree is never empty and every [`PaneId`] occurs at most once;
//! * every ratio is finite and strictly inside (0, 1);
//! * no leaf is deeper than [`MAX_DEPTH`], so recursion here stays shallow;
//! * for any area, the pane rects of [`Layout::geometry`] and the divider rects of
//!   [`Layout::dividers`] tile the area exactly; tiny areas give zero-size rects.
//!
//! Rounding: a split of `total` cells gives `avail = total - 1` to the children and
//! `first = round_half_away_from_zero(avail * ratio)`; `second = avail - first`. So
//! 80 wide at 0.5 is 40 | 1 | 39. When `avail >= 2`, `first` is clamped so that each
//! child keeps enough cells for every pane in it to get one (one per pane plus one per
//! divider along that axis), or, when the area is too small for that, at least one
//! cell per child. Resizes store `first / avail`, which rounds back exactly.
//!
//! Nothing here panics: all arithmetic is saturating or bounded by the clipped area.

use std::collections::HashSet;
use std::fmt;

use ratatui::layout::Rect;

use crate::model::ids::PaneId;

/// Deepest allowed leaf. Far beyond anything usable on a screen, but it bounds the
/// recursion for trees that come from snapshots.
pub const MAX_DEPTH: usize = 128;

/// Direction of a split: where the new (second) pane goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplitDir {
    /// Side by side, vertical divider; the second child is to the right.
    Right,
    /// Stacked, horizontal divider; the second child is below.
    Down,
}

/// A side of a pane, for navigation and resizing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Left,
    Right,
    Up,
    Down,
}

/// Plain-data form of a layout, for snapshots. Validate with [`Layout::from_tree`].
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutTree {
    Pane(PaneId),
    Split {
        dir: SplitDir,
        ratio: f32,
        first: Box<LayoutTree>,
        second: Box<LayoutTree>,
    },
}

/// Why a [`LayoutTree`] was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutError {
    DuplicatePane(PaneId),
    InvalidRatio(f32),
    TooDeep,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicatePane(p) => write!(f, "pane {} occurs more than once", p.0),
            Self::InvalidRatio(r) => write!(f, "split ratio {r} is not inside (0, 1)"),
            Self::TooDeep => write!(f, "layout nests deeper than {MAX_DEPTH} levels"),
        }
    }
}

impl std::error::Error for LayoutError {}

/// Names a split (and so its divider): its index in pre-order among the splits.
/// Only valid until the tree's shape changes (split or remove), which is all a mouse
/// drag needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DividerId(u32);

/// A divider line as placed for one area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divider {
    pub id: DividerId,
    /// The 1-cell-wide line (zero-size when the split's area is empty).
    pub rect: Rect,
    pub dir: SplitDir,
}

/// A validated layout tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    root: LayoutTree,
}

/// A split as placed for one area; `path` leads to it from the root (`true` = second).
struct SplitGeom {
    dir: SplitDir,
    rect: Rect,
    divider: Rect,
    path: Vec<bool>,
}

#[derive(Default)]
struct Pass {
    panes: Vec<(PaneId, Rect)>,
    splits: Vec<SplitGeom>,
}

impl Layout {
    pub fn new(pane: PaneId) -> Layout {
        Layout {
            root: LayoutTree::Pane(pane),
        }
    }

    /// Replaces leaf `target` by a 0.5 split with `target` first and `new` second.
    /// False if `target` is absent, `new` is already present, or depth would exceed
    /// [`MAX_DEPTH`].
    pub fn split(&mut self, target: PaneId, dir: SplitDir, new: PaneId) -> bool {
        if self.contains(new) {
            return false;
        }
        let Some(path) = path_to(&self.root, target) else {
            return false;
        };
        if path.len() >= MAX_DEPTH {
            return false;
        }
        let Some(node) = node_at_mut(&mut self.root, &path) else {
            return false;
        };
        *node = LayoutTree::Split {
            dir,
            ratio: 0.5,
            first: Box::new(LayoutTree::Pane(target)),
            second: Box::new(LayoutTree::Pane(new)),
        };
        true
    }

    /// Exchanges the places of panes `a` and `b`. False (unchanged) unless both are here.
    pub fn swap(&mut self, a: PaneId, b: PaneId) -> bool {
        let (Some(pa), Some(pb)) = (path_to(&self.root, a), path_to(&self.root, b)) else {
            return false;
        };
        for (path, pane) in [(pa, b), (pb, a)] {
            if let Some(node) = node_at_mut(&mut self.root, &path) {
                *node = LayoutTree::Pane(pane);
            }
        }
        true
    }

    /// Removes leaf `pane`; its sibling subtree takes the parent's place (and area).
    /// Returns the pane to focus next: the sibling's leaf that touched the removed
    /// pane. None (layout unchanged) if `pane` is absent or the only pane.
    pub fn remove(&mut self, pane: PaneId) -> Option<PaneId> {
        let path = path_to(&self.root, pane)?;
        let (&was_second, parent_path) = path.split_last()?;
        let parent = node_at_mut(&mut self.root, parent_path)?;
        let old = std::mem::replace(parent, LayoutTree::Pane(pane));
        let LayoutTree::Split {
            dir, first, second, ..
        } = old
        else {
            // Unreachable for a valid path; restore rather than lose the node.
            *parent = old;
            return None;
        };
        let sibling = if was_second { *first } else { *second };
        // The sibling touched the removed pane at its end edge (if it was first) or
        // start edge (if it was second).
        let focus = edge_leaf(&sibling, dir, was_second);
        *parent = sibling;
        Some(focus)
    }

    /// Number of panes (always at least one).
    #[allow(clippy::len_without_is_empty)] // a layout is never empty
    pub fn len(&self) -> usize {
        self.panes().len()
    }

    /// Panes in tree order: left-to-right, top-to-bottom.
    pub fn panes(&self) -> Vec<PaneId> {
        let mut out = Vec::new();
        self.for_each_pane(|p| out.push(p));
        out
    }

    /// Calls `f` with each pane in tree order, allocating nothing (for what runs every
    /// frame).
    pub fn for_each_pane(&self, mut f: impl FnMut(PaneId)) {
        visit_panes(&self.root, &mut f);
    }

    pub fn contains(&self, pane: PaneId) -> bool {
        path_to(&self.root, pane).is_some()
    }

    /// The first pane in tree order (top-left-most).
    pub fn first(&self) -> PaneId {
        let mut node = &self.root;
        loop {
            match node {
                LayoutTree::Pane(p) => return *p,
                LayoutTree::Split { first, .. } => node = first,
            }
        }
    }

    /// Every pane's rect in `area`, in tree order.
    pub fn geometry(&self, area: Rect) -> Vec<(PaneId, Rect)> {
        self.pass(area).panes
    }

    /// Every divider in `area`, in pre-order (ids ascending).
    pub fn dividers(&self, area: Rect) -> Vec<Divider> {
        (self.pass(area).splits.into_iter().enumerate())
            .map(|(i, s)| Divider {
                id: DividerId(u32::try_from(i).unwrap_or(u32::MAX)),
                rect: s.divider,
                dir: s.dir,
            })
            .collect()
    }

    /// The pane across the divider on `side` of `from`, like tmux: among panes that
    /// touch that edge and overlap `from` on the other axis, the one overlapping most;
    /// ties go to the one whose middle is nearest `from`'s middle, then top/left.
    /// None at the area's edge.
    pub fn neighbor(&self, area: Rect, from: PaneId, side: Side) -> Option<PaneId> {
        let panes = self.geometry(area);
        let r = panes.iter().find(|(p, _)| *p == from)?.1;
        if r.is_empty() {
            return None;
        }
        let (x0, x1) = (u32::from(r.x), u32::from(r.x) + u32::from(r.width));
        let (y0, y1) = (u32::from(r.y), u32::from(r.y) + u32::from(r.height));
        let mut best: Option<((u32, u32, u32), PaneId)> = None;
        for &(p, c) in &panes {
            if p == from || c.is_empty() {
                continue;
            }
            let (cx0, cx1) = (u32::from(c.x), u32::from(c.x) + u32::from(c.width));
            let (cy0, cy1) = (u32::from(c.y), u32::from(c.y) + u32::from(c.height));
            // (touches, perpendicular span of `from`, perpendicular span of candidate)
            let (touches, (a0, a1), (b0, b1)) = match side {
                Side::Right => (cx0 == x1 + 1, (y0, y1), (cy0, cy1)),
                Side::Left => (cx1 + 1 == x0, (y0, y1), (cy0, cy1)),
                Side::Down => (cy0 == y1 + 1, (x0, x1), (cx0, cx1)),
                Side::Up => (cy1 + 1 == y0, (x0, x1), (cx0, cx1)),
            };
            let overlap = a1.min(b1).saturating_sub(a0.max(b0));
            // A thin pane may face only a divider end-on; then the panes on either
            // side of that divider (one cell off) still count, after real overlaps.
            if !touches || a1 + 1 < b0 || b1 + 1 < a0 {
                continue;
            }
            // Doubled midpoints keep the distance integral.
            let dist = (a0 + a1).abs_diff(b0 + b1);
            let key = (u32::MAX - overlap, dist, b0);
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, p));
            }
        }
        best.map(|(_, p)| p)
    }

    /// Moves the border of `pane` on `side` outward by `cells` (to shrink a pane, grow
    /// its neighbour). Changes the nearest ancestor split whose divider is that border,
    /// clamped so every pane keeps a cell; other dividers keep their absolute position
    /// where they can. False if there is no such split (the pane touches the area's
    /// edge) or nothing changed.
    pub fn resize(&mut self, area: Rect, pane: PaneId, side: Side, cells: u16) -> bool {
        let area = clip(area);
        let (axis, grow_end) = match side {
            Side::Right => (SplitDir::Right, true),
            Side::Left => (SplitDir::Right, false),
            Side::Down => (SplitDir::Down, true),
            Side::Up => (SplitDir::Down, false),
        };
        let Some(path) = path_to(&self.root, pane) else {
            return false;
        };
        // Growing the end edge needs a split where the pane is in the first child.
        let mut found = None;
        let (mut node, mut rect) = (&self.root, area);
        for (depth, &to_second) in path.iter().enumerate() {
            let LayoutTree::Split {
                dir,
                ratio,
                first,
                second,
            } = node
            else {
                break;
            };
            if *dir == axis && to_second != grow_end {
                found = Some((depth, rect));
            }
            let (a, _, b) = split_rect(rect, *dir, *ratio, mins(first, second, *dir));
            (node, rect) = if to_second { (second, b) } else { (first, a) };
        }
        let Some((depth, rect)) = found else {
            return false;
        };
        let Some(split) = path
            .get(..depth)
            .and_then(|p| node_at_mut(&mut self.root, p))
        else {
            return false;
        };
        let total = extent(rect, axis);
        set_first(split, total, |old| {
            if grow_end {
                old.saturating_add(cells)
            } else {
                old.saturating_sub(cells)
            }
        })
    }

    /// The divider under the cell (x, y), if any.
    pub fn divider_at(&self, area: Rect, x: u16, y: u16) -> Option<DividerId> {
        let pos = ratatui::layout::Position { x, y };
        let i = (self.pass(area).splits.iter()).position(|s| s.divider.contains(pos))?;
        u32::try_from(i).ok().map(DividerId)
    }

    /// Moves divider `id` to absolute column `x` (vertical divider) or row `y`
    /// (horizontal divider), clamped inside its split so each side keeps a cell.
    /// Other dividers keep their absolute position where they can. False if `id` is
    /// unknown or nothing changed.
    pub fn drag_divider(&mut self, area: Rect, id: DividerId, x: u16, y: u16) -> bool {
        let mut pass = self.pass(area);
        let Ok(i) = usize::try_from(id.0) else {
            return false;
        };
        if i >= pass.splits.len() {
            return false;
        }
        let s = pass.splits.swap_remove(i);
        let (pos, start) = match s.dir {
            SplitDir::Right => (x, s.rect.x),
            SplitDir::Down => (y, s.rect.y),
        };
        let total = extent(s.rect, s.dir);
        match node_at_mut(&mut self.root, &s.path) {
            Some(node) => set_first(node, total, |_| pos.saturating_sub(start)),
            None => false,
        }
    }

    /// The plain-data form, e.g. for a snapshot.
    pub fn to_tree(&self) -> LayoutTree {
        self.root.clone()
    }

    /// Validates a plain tree: panes unique, ratios finite in (0, 1), depth bounded.
    pub fn from_tree(tree: LayoutTree) -> Result<Layout, LayoutError> {
        validate(&tree, 0, &mut HashSet::new())?;
        Ok(Layout { root: tree })
    }

    fn pass(&self, area: Rect) -> Pass {
        let mut pass = Pass::default();
        walk(&self.root, clip(area), &mut Vec::new(), &mut pass);
        pass
    }
}

/// Shrinks `area` so that `x + width` and `y + height` fit in u16 (`Rect::new` does
/// that); callers may build a `Rect` by hand, and all other arithmetic relies on it.
fn clip(area: Rect) -> Rect {
    Rect::new(area.x, area.y, area.width, area.height)
}

fn extent(r: Rect, axis: SplitDir) -> u16 {
    match axis {
        SplitDir::Right => r.width,
        SplitDir::Down => r.height,
    }
}

/// Sizes of (first, second) for a split of `total` cells whose children need `mins`
/// cells; the divider takes the rest (one cell, or zero when `total` is 0). See the
/// module doc for the rounding.
fn sizes(total: u16, ratio: f32, mins: (u16, u16)) -> (u16, u16) {
    let avail = total.saturating_sub(1);
    // `as` saturates (NaN to 0), so this cannot go out of range.
    let mut first = ((f64::from(avail) * f64::from(ratio)).round() as u16).min(avail);
    if avail >= 2 {
        let (lo, hi) = bounds(avail, mins);
        first = first.clamp(lo, hi);
    }
    (first, avail - first)
}

/// Range of sizes for the first child of a split with `avail >= 2` cells to share:
/// every pane gets a cell if the space allows, else at least each child does.
fn bounds(avail: u16, (min_first, min_second): (u16, u16)) -> (u16, u16) {
    if u32::from(min_first) + u32::from(min_second) <= u32::from(avail) {
        (min_first, avail - min_second)
    } else {
        (1, avail - 1)
    }
}

/// Cells each child of a split along `axis` needs for each of its panes to get one.
fn mins(first: &LayoutTree, second: &LayoutTree, axis: SplitDir) -> (u16, u16) {
    (min_extent(first, axis), min_extent(second, axis))
}

/// The ratio that makes [`sizes`] give exactly `first` for `avail` available cells.
fn ratio_for(first: u16, avail: u16) -> f32 {
    let r = (f64::from(first) / f64::from(avail)) as f32;
    if r > 0.0 && r < 1.0 {
        r
    } else {
        0.5
    }
}

/// Splits `r` into (first, divider, second).
fn split_rect(r: Rect, dir: SplitDir, ratio: f32, mins: (u16, u16)) -> (Rect, Rect, Rect) {
    let (a, b) = sizes(extent(r, dir), ratio, mins);
    let d = extent(r, dir) - a - b;
    // `r` is clipped, so these offsets stay within u16; saturating is belt and braces.
    let (x, y) = (r.x, r.y);
    match dir {
        SplitDir::Right => (
            Rect::new(x, y, a, r.height),
            Rect::new(x.saturating_add(a), y, d, r.height),
            Rect::new(x.saturating_add(a + d), y, b, r.height),
        ),
        SplitDir::Down => (
            Rect::new(x, y, r.width, a),
            Rect::new(x, y.saturating_add(a), r.width, d),
            Rect::new(x, y.saturating_add(a + d), r.width, b),
        ),
    }
}

fn walk(node: &LayoutTree, rect: Rect, path: &mut Vec<bool>, out: &mut Pass) {
    match node {
        LayoutTree::Pane(p) => out.panes.push((*p, rect)),
        LayoutTree::Split {
            dir,
            ratio,
            first,
            second,
        } => {
            let (a, divider, b) = split_rect(rect, *dir, *ratio, mins(first, second, *dir));
            out.splits.push(SplitGeom {
                dir: *dir,
                rect,
                divider,
                path: path.clone(),
            });
            path.push(false);
            walk(first, a, path, out);
            path.pop();
            path.push(true);
            walk(second, b, path, out);
            path.pop();
        }
    }
}

fn visit_panes(node: &LayoutTree, f: &mut impl FnMut(PaneId)) {
    match node {
        LayoutTree::Pane(p) => f(*p),
        LayoutTree::Split { first, second, .. } => {
            visit_panes(first, f);
            visit_panes(second, f);
        }
    }
}

/// Path from `node` to leaf `pane` (`true` = second child).
fn path_to(node: &LayoutTree, pane: PaneId) -> Option<Vec<bool>> {
    let mut path = Vec::new();
    find_path(node, pane, &mut path).then_some(path)
}

fn find_path(node: &LayoutTree, pane: PaneId, path: &mut Vec<bool>) -> bool {
    match node {
        LayoutTree::Pane(p) => *p == pane,
        LayoutTree::Split { first, second, .. } => {
            for (child, to_second) in [(first, false), (second, true)] {
                path.push(to_second);
                if find_path(child, pane, path) {
                    return true;
                }
                path.pop();
            }
            false
        }
    }
}

fn node_at_mut<'a>(mut node: &'a mut LayoutTree, path: &[bool]) -> Option<&'a mut LayoutTree> {
    for &to_second in path {
        node = match node {
            LayoutTree::Split { first, second, .. } => {
                if to_second {
                    second
                } else {
                    first
                }
            }
            LayoutTree::Pane(_) => return None,
        };
    }
    Some(node)
}

/// The leaf of `node` on its start edge (`at_end == false`) or end edge along `axis`;
/// across the other axis it takes the first (top/left) child.
fn edge_leaf(node: &LayoutTree, axis: SplitDir, at_end: bool) -> PaneId {
    let mut node = node;
    loop {
        match node {
            LayoutTree::Pane(p) => return *p,
            LayoutTree::Split {
                dir, first, second, ..
            } => {
                node = if *dir == axis && at_end {
                    second
                } else {
                    first
                }
            }
        }
    }
}

/// Moves the divider of split `node` (spanning `total` cells) so that its first child
/// gets `want(current size)` cells, clamped so every pane keeps at least one cell
/// (or, in an area too small for that, at least each child). True if it moved.
fn set_first(node: &mut LayoutTree, total: u16, want: impl FnOnce(u16) -> u16) -> bool {
    let LayoutTree::Split {
        dir,
        ratio,
        first,
        second,
    } = node
    else {
        return false;
    };
    let avail = total.saturating_sub(1);
    if avail < 2 {
        return false;
    }
    let m = mins(first, second, *dir);
    let (old_first, old_second) = sizes(total, *ratio, m);
    let wanted = want(old_first);
    let (lo, hi) = bounds(avail, m);
    let new_first = wanted.clamp(lo, hi);
    // When the area is already too small for the minimums, clamping can point the
    // other way; never move a divider against the request.
    if new_first == old_first || (new_first > old_first) != (wanted > old_first) {
        return false;
    }
    *ratio = ratio_for(new_first, avail);
    // The first child changes at its end edge (the divider), the second at its start.
    absorb(first, *dir, old_first, new_first, true);
    absorb(second, *dir, old_second, avail - new_first, false);
    true
}

/// Cells `node` needs along `axis` for each of its panes to get one.
fn min_extent(node: &LayoutTree, axis: SplitDir) -> u16 {
    match node {
        LayoutTree::Pane(_) => 1,
        LayoutTree::Split {
            dir, first, second, ..
        } => {
            let (a, b) = (min_extent(first, axis), min_extent(second, axis));
            if *dir == axis {
                a.saturating_add(b).saturating_add(1)
            } else {
                a.max(b)
            }
        }
    }
}

/// Re-ratios `node` after its extent along `axis` went from `old` to `new` cells by a
/// move of its end edge (`at_end`) or start edge: the children nearest that edge take
/// the change, so dividers farther away stay where the user put them. Ratios are left
/// alone when either size is too small to say anything.
fn absorb(node: &mut LayoutTree, axis: SplitDir, old: u16, new: u16, at_end: bool) {
    let LayoutTree::Split {
        dir,
        ratio,
        first,
        second,
    } = node
    else {
        return;
    };
    if *dir != axis {
        absorb(first, axis, old, new, at_end);
        absorb(second, axis, old, new, at_end);
        return;
    }
    let avail = new.saturating_sub(1);
    if avail < 2 || old.saturating_sub(1) < 2 {
        return;
    }
    let m = mins(first, second, axis);
    let (old_first, old_second) = sizes(old, *ratio, m);
    let (lo, hi) = bounds(avail, m);
    let new_first = if at_end {
        old_first.clamp(lo, hi)
    } else {
        avail - old_second.clamp(avail - hi, avail - lo)
    };
    *ratio = ratio_for(new_first, avail);
    absorb(first, axis, old_first, new_first, at_end);
    absorb(second, axis, old_second, avail - new_first, at_end);
}

fn validate(
    node: &LayoutTree,
    depth: usize,
    seen: &mut HashSet<PaneId>,
) -> Result<(), LayoutError> {
    if depth > MAX_DEPTH {
        return Err(LayoutError::TooDeep);
    }
    match node {
        LayoutTree::Pane(p) => {
            if !seen.insert(*p) {
                return Err(LayoutError::DuplicatePane(*p));
            }
        }
        LayoutTree::Split {
            ratio,
            first,
            second,
            ..
        } => {
            if !(ratio.is_finite() && *ratio > 0.0 && *ratio < 1.0) {
                return Err(LayoutError::InvalidRatio(*ratio));
            }
            validate(first, depth + 1, seen)?;
            validate(second, depth + 1, seen)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
