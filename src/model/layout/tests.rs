use super::*;

fn p(n: u32) -> PaneId {
    PaneId(n)
}

fn r(x: u16, y: u16, width: u16, height: u16) -> Rect {
    Rect::new(x, y, width, height)
}

const AREA: Rect = Rect::new(0, 0, 80, 24);

fn rect_of(l: &Layout, area: Rect, pane: u32) -> Rect {
    let g = l.geometry(area);
    g.iter()
        .find(|(q, _)| *q == p(pane))
        .map(|(_, r)| *r)
        .unwrap()
}

/// Builds a layout from (target, dir, new) splits starting at pane 1.
fn build(splits: &[(u32, SplitDir, u32)]) -> Layout {
    let mut l = Layout::new(p(1));
    for &(t, d, n) in splits {
        assert!(l.split(p(t), d, p(n)));
    }
    l
}

/// 1 top-left, 2 top-right, 3 bottom-left, 4 bottom-right.
fn grid() -> Layout {
    use SplitDir::*;
    build(&[(1, Right, 2), (1, Down, 3), (2, Down, 4)])
}

/// Every cell of `area` is covered by exactly one pane or divider, nothing outside.
fn assert_tiles(l: &Layout, area: Rect) {
    let area = clip(area);
    let (w, h) = (usize::from(area.width), usize::from(area.height));
    let mut count = vec![0u8; w * h];
    let rects = (l.geometry(area).into_iter().map(|(_, r)| r))
        .chain(l.dividers(area).into_iter().map(|d| d.rect));
    for rc in rects {
        assert!(
            area.union(rc) == area || rc.is_empty(),
            "{rc:?} outside {area:?}"
        );
        for y in rc.top()..rc.bottom() {
            for x in rc.left()..rc.right() {
                count[usize::from(y - area.y) * w + usize::from(x - area.x)] += 1;
            }
        }
    }
    assert!(
        count.iter().all(|&c| c == 1),
        "not tiled: {l:?} in {area:?}"
    );
}

/// Whether `area` has room for every pane to get a cell.
fn roomy(l: &Layout, area: Rect) -> bool {
    min_extent(&l.root, SplitDir::Right) <= area.width
        && min_extent(&l.root, SplitDir::Down) <= area.height
}

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn u16(&mut self, n: u16) -> u16 {
        self.below(u64::from(n)) as u16
    }
}

#[test]
fn split_right_and_down_exact_rects() {
    // avail 79, 39.5 rounds up: 40 | divider at column 40 | 39.
    let l = build(&[(1, SplitDir::Right, 2)]);
    assert_eq!(
        l.geometry(AREA),
        vec![(p(1), r(0, 0, 40, 24)), (p(2), r(41, 0, 39, 24))]
    );
    let d = l.dividers(AREA);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].rect, d[0].dir), (r(40, 0, 1, 24), SplitDir::Right));

    // avail 23, 11.5 rounds up: 12 rows, divider row 12, 11 rows.
    let l = build(&[(1, SplitDir::Down, 2)]);
    assert_eq!(
        l.geometry(AREA),
        vec![(p(1), r(0, 0, 80, 12)), (p(2), r(0, 13, 80, 11))]
    );
    assert_eq!(l.dividers(AREA)[0].rect, r(0, 12, 80, 1));

    // Offsets are honoured.
    let l = build(&[(1, SplitDir::Right, 2)]);
    assert_eq!(rect_of(&l, r(5, 3, 11, 4), 2), r(11, 3, 5, 4));
}

#[test]
fn nested_splits_and_queries() {
    let l = build(&[(1, SplitDir::Right, 2), (2, SplitDir::Down, 3)]);
    assert_eq!(
        l.geometry(AREA),
        vec![
            (p(1), r(0, 0, 40, 24)),
            (p(2), r(41, 0, 39, 12)),
            (p(3), r(41, 13, 39, 11))
        ]
    );
    let d: Vec<Rect> = l.dividers(AREA).iter().map(|d| d.rect).collect();
    assert_eq!(d, vec![r(40, 0, 1, 24), r(41, 12, 39, 1)]);
    assert_eq!(
        (l.len(), l.panes(), l.first()),
        (3, vec![p(1), p(2), p(3)], p(1))
    );
    assert!(l.contains(p(3)) && !l.contains(p(4)));
    assert_tiles(&l, AREA);
    // Tree order is left-to-right even when the left pane was split later.
    let l = build(&[(1, SplitDir::Right, 2), (1, SplitDir::Down, 3)]);
    assert_eq!(l.panes(), vec![p(1), p(3), p(2)]);
}

#[test]
fn split_rejects_bad_input_and_depth() {
    let mut l = Layout::new(p(1));
    assert!(!l.split(p(9), SplitDir::Right, p(2)));
    assert!(!l.split(p(1), SplitDir::Right, p(1)));
    assert!(l.split(p(1), SplitDir::Right, p(2)));
    assert!(!l.split(p(2), SplitDir::Down, p(1)));
    assert_eq!(l.len(), 2);

    let mut l = Layout::new(p(0));
    let mut n = 1;
    while l.split(p(0), SplitDir::Down, p(n)) {
        n += 1;
    }
    assert_eq!(l.len(), MAX_DEPTH + 1);
    assert!(!l.split(p(n - 1), SplitDir::Right, p(n)));
    assert!(
        l.split(p(1), SplitDir::Right, p(n)),
        "shallow leaves still split"
    );
    assert_tiles(&l, r(0, 0, 3, 300));
    assert_tiles(&l, r(0, 0, 1, 1));
}

#[test]
fn remove_focuses_adjacent_leaf_and_restores_area() {
    use SplitDir::*;
    let mut l = grid();
    assert_eq!(l.remove(p(2)), Some(p(4)));
    assert_eq!(rect_of(&l, AREA, 4), r(41, 0, 39, 24));
    assert_tiles(&l, AREA);

    // Removed pane was first: the sibling's start edge; across, the top one.
    let mut l = build(&[(1, Right, 2), (2, Down, 3)]);
    assert_eq!(l.remove(p(1)), Some(p(2)));
    assert_eq!(
        l.geometry(AREA),
        vec![(p(2), r(0, 0, 80, 12)), (p(3), r(0, 13, 80, 11))]
    );

    // Removed pane was second: the sibling's end edge, i.e. the pane next to it.
    let mut l = build(&[(1, Right, 2), (1, Right, 3)]);
    assert_eq!(l.remove(p(2)), Some(p(3)));
    assert_eq!(l.panes(), vec![p(1), p(3)]);
    assert_eq!(l.geometry(AREA), build(&[(1, Right, 3)]).geometry(AREA));

    // Split then remove is an exact undo, ratios included.
    let mut l = grid();
    assert!(l.resize(AREA, p(1), Side::Right, 7));
    let before = l.clone();
    assert!(l.split(p(3), Down, p(9)));
    assert_eq!(l.remove(p(9)), Some(p(3)));
    assert_eq!(l, before);

    let mut single = Layout::new(p(1));
    assert_eq!(single.remove(p(1)), None);
    assert_eq!(single.remove(p(2)), None);
    assert_eq!(single, Layout::new(p(1)));
    assert_eq!(l.remove(p(42)), None);
    assert_eq!(l, before);
}

#[test]
fn neighbor_on_grid() {
    let l = grid();
    let n = |from, side| l.neighbor(AREA, p(from), side);
    assert_eq!(n(1, Side::Right), Some(p(2)));
    assert_eq!(n(1, Side::Down), Some(p(3)));
    assert_eq!(n(4, Side::Left), Some(p(3)));
    assert_eq!(n(4, Side::Up), Some(p(2)));
    assert_eq!(n(1, Side::Left), None);
    assert_eq!(n(1, Side::Up), None);
    assert_eq!(n(4, Side::Right), None);
    assert_eq!(n(4, Side::Down), None);
    assert_eq!(l.neighbor(AREA, p(9), Side::Up), None);
}

#[test]
fn neighbor_on_uneven_layout() {
    use SplitDir::*;
    // 1 over 2 on the left; 3, 4, 5 stacked on the right (12, 5 and 5 rows).
    let l = build(&[(1, Right, 3), (1, Down, 2), (3, Down, 4), (4, Down, 5)]);
    assert_eq!(rect_of(&l, AREA, 4), r(41, 13, 39, 5));
    let n = |from, side| l.neighbor(AREA, p(from), side);
    assert_eq!(n(1, Side::Right), Some(p(3)));
    // 4 and 5 overlap 2 equally and are equally far from its middle: top wins.
    assert_eq!(n(2, Side::Right), Some(p(4)));
    assert_eq!(n(5, Side::Left), Some(p(2)));
    assert_eq!(n(3, Side::Left), Some(p(1)));
    assert_eq!(n(4, Side::Up), Some(p(3)));
    assert_eq!(n(4, Side::Down), Some(p(5)));

    // A 1-cell pane facing a divider end-on still has neighbours (top/left wins).
    let (pane, split) = (
        |n| Box::new(LayoutTree::Pane(p(n))),
        |dir, ratio, a, b| {
            Box::new(LayoutTree::Split {
                dir,
                ratio,
                first: a,
                second: b,
            })
        },
    );
    let tree = split(
        Down,
        0.5,
        split(
            Right,
            2.0 / 6.0,
            pane(1),
            split(Right, 1.0 / 3.0, pane(2), pane(5)),
        ),
        split(Right, 0.5, pane(3), pane(4)),
    );
    let l = Layout::from_tree(*tree).unwrap();
    let area = r(0, 0, 7, 3);
    assert_eq!(rect_of(&l, area, 2), r(3, 0, 1, 1));
    assert_eq!(l.dividers(area)[3].rect, r(3, 2, 1, 1));
    assert_eq!(l.neighbor(area, p(2), Side::Down), Some(p(3)));
    assert_eq!(l.neighbor(area, p(3), Side::Up), Some(p(1)));

    // A tall pane prefers the right-hand pane it overlaps most.
    let mut l = build(&[(1, Right, 2), (2, Down, 3)]);
    assert_eq!(l.neighbor(AREA, p(1), Side::Right), Some(p(2)));
    assert!(l.resize(AREA, p(3), Side::Up, 5));
    assert_eq!(l.neighbor(AREA, p(1), Side::Right), Some(p(3)));
}

#[test]
fn resize_moves_one_border() {
    use SplitDir::*;
    let mut l = build(&[(1, Right, 2)]);
    assert!(l.resize(AREA, p(1), Side::Right, 5));
    assert_eq!(
        l.geometry(AREA),
        vec![(p(1), r(0, 0, 45, 24)), (p(2), r(46, 0, 34, 24))]
    );
    assert!(l.resize(AREA, p(2), Side::Left, 5));
    assert_eq!(rect_of(&l, AREA, 1), r(0, 0, 40, 24));
    // Edges of the area, and the wrong orientation.
    assert!(!l.resize(AREA, p(1), Side::Left, 1));
    assert!(!l.resize(AREA, p(2), Side::Right, 1));
    assert!(!l.resize(AREA, p(1), Side::Up, 1));
    assert!(!l.resize(AREA, p(1), Side::Down, 1));
    assert!(!l.resize(AREA, p(9), Side::Right, 1));
    assert!(!l.resize(AREA, p(1), Side::Right, 0));
    // Clamped so the other side keeps one cell; then nothing changes.
    assert!(l.resize(AREA, p(1), Side::Right, u16::MAX));
    assert_eq!(rect_of(&l, AREA, 2), r(79, 0, 1, 24));
    assert!(!l.resize(AREA, p(1), Side::Right, 1));
    assert!(l.resize(AREA, p(2), Side::Left, 1000));
    assert_eq!(rect_of(&l, AREA, 1), r(0, 0, 1, 24));

    let mut l = build(&[(1, Down, 2)]);
    assert!(l.resize(AREA, p(2), Side::Up, 3));
    assert_eq!(
        l.geometry(AREA),
        vec![(p(1), r(0, 0, 80, 9)), (p(2), r(0, 10, 80, 14))]
    );
    assert!(l.resize(AREA, p(1), Side::Down, 1));
    assert_eq!(rect_of(&l, AREA, 1).height, 10);
    assert!(!l.resize(AREA, p(2), Side::Down, 1));

    // Three columns: growing the middle one leftwards keeps its right border.
    let mut l = build(&[(1, Right, 2), (2, Right, 3)]);
    assert_eq!(rect_of(&l, AREA, 2), r(41, 0, 19, 24));
    assert!(l.resize(AREA, p(2), Side::Left, 10));
    assert_eq!(
        l.geometry(AREA),
        vec![
            (p(1), r(0, 0, 30, 24)),
            (p(2), r(31, 0, 29, 24)),
            (p(3), r(61, 0, 19, 24))
        ]
    );
    // Growing 1 rightwards shrinks its neighbour 2 first, 3 stays put...
    assert!(l.resize(AREA, p(1), Side::Right, 20));
    assert_eq!(rect_of(&l, AREA, 2), r(51, 0, 9, 24));
    assert_eq!(rect_of(&l, AREA, 3), r(61, 0, 19, 24));
    // ...until 2 is down to one cell; then 3 gives way too, also to one cell.
    assert!(l.resize(AREA, p(1), Side::Right, 100));
    assert_eq!(rect_of(&l, AREA, 1), r(0, 0, 76, 24));
    assert_eq!(rect_of(&l, AREA, 2), r(77, 0, 1, 24));
    assert_eq!(rect_of(&l, AREA, 3), r(79, 0, 1, 24));
    assert!(!l.resize(AREA, p(1), Side::Right, 1));
    assert_tiles(&l, AREA);

    // A pane inside a column resizes the column.
    let mut l = build(&[(1, Right, 2), (2, Down, 3)]);
    assert!(l.resize(AREA, p(3), Side::Left, 4));
    assert_eq!(rect_of(&l, AREA, 2), r(37, 0, 43, 12));
    assert_eq!(rect_of(&l, AREA, 3), r(37, 13, 43, 11));
}

#[test]
fn divider_at_and_drag() {
    use SplitDir::*;
    let mut l = build(&[(1, Right, 2), (2, Down, 3)]);
    let vertical = l.divider_at(AREA, 40, 5).unwrap();
    let horizontal = l.divider_at(AREA, 50, 12).unwrap();
    assert_ne!(vertical, horizontal);
    assert_eq!(l.divider_at(AREA, 39, 5), None);
    assert_eq!(l.divider_at(AREA, 30, 12), None);
    assert_eq!(l.divider_at(AREA, 200, 200), None);

    assert!(l.drag_divider(AREA, vertical, 20, 0));
    assert_eq!(rect_of(&l, AREA, 1), r(0, 0, 20, 24));
    assert_eq!(rect_of(&l, AREA, 2), r(21, 0, 59, 12));
    assert!(
        !l.drag_divider(AREA, vertical, 20, 9),
        "y is ignored for a column"
    );
    assert!(l.drag_divider(AREA, vertical, 0, 0));
    assert_eq!(rect_of(&l, AREA, 1).width, 1);
    assert!(l.drag_divider(AREA, vertical, 500, 0));
    assert_eq!(rect_of(&l, AREA, 2).width, 1);
    assert!(l.drag_divider(AREA, vertical, 40, 0));

    assert!(l.drag_divider(AREA, horizontal, 0, 5));
    assert_eq!(rect_of(&l, AREA, 2), r(41, 0, 39, 5));
    assert_eq!(l.divider_at(AREA, 41, 5), Some(horizontal));
    assert!(!l.drag_divider(AREA, DividerId(99), 1, 1));
    assert_tiles(&l, AREA);
}

#[test]
fn tree_round_trip_and_validation() {
    let mut l = grid();
    assert!(l.resize(AREA, p(1), Side::Right, 9));
    assert!(l.resize(AREA, p(4), Side::Up, 3));
    let back = Layout::from_tree(l.to_tree()).unwrap();
    assert_eq!(back, l);
    assert_eq!(back.geometry(AREA), l.geometry(AREA));

    let split = |ratio, a, b| LayoutTree::Split {
        dir: SplitDir::Right,
        ratio,
        first: Box::new(LayoutTree::Pane(p(a))),
        second: Box::new(LayoutTree::Pane(p(b))),
    };
    assert_eq!(
        Layout::from_tree(split(0.5, 3, 3)),
        Err(LayoutError::DuplicatePane(p(3)))
    );
    for bad in [0.0, 1.0, -0.5, 1.5, f32::INFINITY] {
        assert_eq!(
            Layout::from_tree(split(bad, 1, 2)),
            Err(LayoutError::InvalidRatio(bad))
        );
    }
    assert!(matches!(
        Layout::from_tree(split(f32::NAN, 1, 2)),
        Err(LayoutError::InvalidRatio(r)) if r.is_nan()
    ));
    assert!(Layout::from_tree(split(0.001, 1, 2)).is_ok());

    let chain = |depth: u32| {
        let mut t = LayoutTree::Pane(p(0));
        for i in 1..=depth {
            t = LayoutTree::Split {
                dir: SplitDir::Down,
                ratio: 0.5,
                first: Box::new(t),
                second: Box::new(LayoutTree::Pane(p(i))),
            };
        }
        t
    };
    assert!(Layout::from_tree(chain(MAX_DEPTH as u32)).is_ok());
    assert_eq!(
        Layout::from_tree(chain(MAX_DEPTH as u32 + 1)),
        Err(LayoutError::TooDeep)
    );
    assert!(!LayoutError::TooDeep.to_string().is_empty());
}

#[test]
fn tiny_and_extreme_areas_never_panic() {
    let mut rng = Rng(7);
    let areas = [
        r(0, 0, 0, 0),
        r(0, 0, 1, 1),
        r(0, 0, 2, 1),
        r(0, 0, 1, 2),
        r(3, 3, 3, 3),
        r(0, 0, 5, 0),
        Rect {
            x: u16::MAX - 3,
            y: u16::MAX,
            width: 100,
            height: 100,
        },
        Rect {
            x: 0,
            y: 0,
            width: u16::MAX,
            height: u16::MAX,
        },
    ];
    let mut l = grid();
    assert!(l.split(p(4), SplitDir::Right, p(5)));
    for area in areas {
        let mut l = l.clone();
        if area.width < 1000 {
            assert_tiles(&l, area);
        }
        let (x, y) = (area.x.saturating_add(1), area.y.saturating_add(1));
        for pane in l.panes() {
            for side in [Side::Left, Side::Right, Side::Up, Side::Down] {
                l.neighbor(area, pane, side);
                l.resize(area, pane, side, rng.u16(5));
            }
        }
        if let Some(id) = l.divider_at(area, area.x, area.y) {
            l.drag_divider(area, id, x, y);
        }
        for d in l.dividers(area) {
            l.drag_divider(area, d.id, x, y);
        }
        assert!(Layout::from_tree(l.to_tree()).is_ok());
        if area.width < 1000 {
            assert_tiles(&l, area);
        }
    }
    // Ratios survive a stay in a tiny area.
    let before = l.clone();
    assert!(!l.resize(r(0, 0, 1, 1), p(1), Side::Right, 3));
    assert_eq!(l, before);
}

#[test]
fn random_operations_keep_tiling() {
    let sides = [Side::Left, Side::Right, Side::Up, Side::Down];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..150 {
        let mut l = Layout::new(p(0));
        let mut next = 1;
        for _ in 0..40 {
            let area = r(rng.u16(20), rng.u16(20), rng.u16(101), rng.u16(41));
            let panes = l.panes();
            let pane = panes[rng.below(panes.len() as u64) as usize];
            match rng.below(5) {
                0 | 1 => {
                    let dir = if rng.below(2) == 0 {
                        SplitDir::Right
                    } else {
                        SplitDir::Down
                    };
                    assert!(l.split(pane, dir, p(next)));
                    next += 1;
                }
                2 => {
                    let focus = l.remove(pane);
                    assert_eq!(focus.is_some(), panes.len() > 1);
                    assert!(focus.is_none_or(|f| l.contains(f) && f != pane));
                    assert_eq!(l.len(), panes.len() - usize::from(focus.is_some()));
                }
                3 => {
                    let side = sides[rng.below(4) as usize];
                    let roomy = roomy(&l, area);
                    let b = rect_of(&l, area, pane.0);
                    if l.resize(area, pane, side, rng.u16(30) + 1) && roomy {
                        let a = rect_of(&l, area, pane.0);
                        // Only the border on `side` moves, and outward.
                        let ok = match side {
                            Side::Right => a.right() > b.right() && a.left() == b.left(),
                            Side::Left => a.left() < b.left() && a.right() == b.right(),
                            Side::Down => a.bottom() > b.bottom() && a.top() == b.top(),
                            Side::Up => a.top() < b.top() && a.bottom() == b.bottom(),
                        };
                        assert!(ok, "{side:?} {b:?} -> {a:?} in {area:?}");
                    }
                }
                _ => {
                    let (x, y) = (rng.u16(140), rng.u16(70));
                    let id = l
                        .divider_at(area, x, y)
                        .unwrap_or(DividerId(rng.below(8) as u32));
                    l.drag_divider(area, id, x, y);
                }
            }
            let panes = l.panes();
            let unique: HashSet<_> = panes.iter().collect();
            assert_eq!(unique.len(), panes.len());
            assert_eq!(l.dividers(area).len(), panes.len() - 1);
            assert_eq!(Layout::from_tree(l.to_tree()).as_ref(), Ok(&l));
            assert_tiles(&l, area);
            if roomy(&l, area) {
                let g = l.geometry(area);
                assert!(g.iter().all(|(_, r)| !r.is_empty()));
                // Exactly the panes off the area's edge on a side have a neighbour.
                let (q, rc) = g[rng.below(g.len() as u64) as usize];
                for (side, at_edge) in [
                    (Side::Left, rc.left() == area.left()),
                    (Side::Right, rc.right() == area.right()),
                    (Side::Up, rc.top() == area.top()),
                    (Side::Down, rc.bottom() == area.bottom()),
                ] {
                    let n = l.neighbor(area, q, side);
                    assert_eq!(n.is_none(), at_edge, "{q:?} {side:?} {g:?}");
                    assert_ne!(n, Some(q));
                }
            }
            assert_tiles(&l, r(0, 0, rng.u16(121), rng.u16(51)));
        }
    }
}

#[test]
fn swapping_two_panes_exchanges_their_places_and_nothing_else() {
    let mut l = grid();
    let (before_1, before_3) = (rect_of(&l, AREA, 1), rect_of(&l, AREA, 3));
    let shape = l.geometry(AREA).len();
    assert!(l.swap(p(1), p(3)));
    assert_eq!(rect_of(&l, AREA, 3), before_1);
    assert_eq!(rect_of(&l, AREA, 1), before_3);
    assert_eq!(l.geometry(AREA).len(), shape);
    assert!(!l.swap(p(1), p(99)), "a pane that is not there");
    assert_eq!(
        rect_of(&l, AREA, 1),
        before_3,
        "unchanged by a refused swap"
    );
}
