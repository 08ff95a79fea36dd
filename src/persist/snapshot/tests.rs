use super::*;

fn sample() -> SessionSnapshot {
    SessionSnapshot {
        version: SNAPSHOT_VERSION,
        generation: 7,
        saved_at: 1_700_000_000,
        counters: Counters {
            workspace: 2,
            tab: 3,
            pane: 5,
        },
        active_workspace: 1,
        workspaces: vec![
            WorkspaceSnap {
                id: 1,
                name: "main".into(),
                active_tab: 0,
                tabs: vec![TabSnap {
                    id: 1,
                    name: Some("build".into()),
                    zoomed: false,
                    focused: 4,
                    layout: LayoutSnap::Split {
                        split: DirSnap::Right,
                        ratio: 0.25,
                        first: Box::new(LayoutSnap::Pane { pane: 1 }),
                        second: Box::new(LayoutSnap::Pane { pane: 4 }),
                    },
                    panes: vec![
                        PaneSnap {
                            id: 1,
                            label: Some("logs".into()),
                            cwd: Some("/x".into()),
                            argv: vec![],
                            command: Some(vec!["less".into(), "f".into()]),
                            agent: Some("claude".into()),
                            agent_session: Some(AgentSessionRef::Id("abc".into())),
                            agent_source: Some("herdr:claude".into()),
                            agent_flags: Vec::new(),
                        },
                        PaneSnap {
                            id: 4,
                            label: None,
                            cwd: None,
                            argv: vec!["make".into()],
                            command: None,
                            agent: None,
                            agent_session: None,
                            agent_source: None,
                            agent_flags: Vec::new(),
                        },
                    ],
                }],
            },
            WorkspaceSnap {
                id: 2,
                name: "b".into(),
                active_tab: 0,
                tabs: vec![TabSnap {
                    id: 3,
                    name: None,
                    zoomed: true,
                    focused: 5,
                    layout: LayoutSnap::Pane { pane: 5 },
                    panes: vec![PaneSnap {
                        id: 5,
                        label: None,
                        cwd: None,
                        argv: vec![],
                        command: None,
                        agent: None,
                        agent_session: None,
                        agent_source: None,
                        agent_flags: Vec::new(),
                    }],
                }],
            },
        ],
    }
}

#[test]
fn round_trip() {
    let s = sample();
    let bytes = serde_json::to_vec_pretty(&s).unwrap();
    assert_eq!(parse(&bytes).unwrap(), s);
}

#[test]
fn v1_fixture_migrates() {
    let bytes = include_bytes!("../fixtures/session-v1.json");
    let s = parse(bytes).unwrap();
    assert_eq!(s.version, SNAPSHOT_VERSION);
    assert_eq!(
        s.counters,
        Counters {
            workspace: 2,
            tab: 3,
            pane: 6
        }
    );
    assert_eq!(s.active_workspace, 1);
    let api = &s.workspaces[0].tabs[0];
    assert_eq!(api.layout.panes(), [1, 2, 3]);
    assert_eq!(
        api.focused, 2,
        "focused index 1 in layout order is the second pane"
    );
    assert_eq!(api.panes[1].cwd.as_deref(), Some("/srv/api/tests"));
    assert_eq!(s.workspaces[1].active_tab, 1);
    assert!(s.workspaces[1].tabs[1].zoomed);
    assert!(matches!(api.layout, LayoutSnap::Split { ratio, .. } if (ratio - 0.6).abs() < 1e-6));
}

#[test]
fn newer_versions_are_refused_not_misread() {
    let mut v = serde_json::to_value(sample()).unwrap();
    v["version"] = serde_json::json!(SNAPSHOT_VERSION + 1);
    v["something_new"] = serde_json::json!({"x": 1});
    let bytes = serde_json::to_vec(&v).unwrap();
    assert_eq!(
        parse(&bytes),
        Err(LoadError::Newer {
            found: (SNAPSHOT_VERSION + 1).to_string()
        })
    );
    assert_eq!(version_of(&bytes), Some(SNAPSHOT_VERSION + 1));
}

#[test]
fn a_version_beyond_u32_is_newer_not_corrupt() {
    // Above u32, above u64 (JSON reads it as a float), and a float above ours: each may be
    // a future herdr's file, which must be kept, never moved aside or written over.
    for version in [
        "4294967296",
        "18446744073709551615",
        "1e30",
        "99999999999999999999999",
    ] {
        let text = format!(r#"{{"version": {version}, "future": true}}"#);
        match parse(text.as_bytes()) {
            Err(LoadError::Newer { .. }) => {}
            other => panic!("version {version}: {other:?}"),
        }
    }
    for version in ["-1", "1.5", "0"] {
        let text = format!(r#"{{"version": {version}}}"#);
        assert!(
            matches!(parse(text.as_bytes()), Err(LoadError::Corrupt(_))),
            "version {version}"
        );
    }
}

#[test]
fn corrupt_files_are_named_as_such() {
    for bad in [
        &b"{"[..],
        b"[]",
        b"{\"version\":\"2\"}",
        b"{\"version\":2}",
        b"{\"version\":0,\"workspaces\":[]}",
    ] {
        assert!(
            matches!(parse(bad), Err(LoadError::Corrupt(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn inconsistent_structures_are_corrupt() {
    let mut s = sample();
    s.workspaces[0].tabs[0].panes.pop();
    assert!(matches!(validate(&s), Err(LoadError::Corrupt(m)) if m.contains("disagree")));
    let mut s = sample();
    s.workspaces[0].tabs[0].focused = 5;
    assert!(validate(&s).is_err());
    let mut s = sample();
    s.counters.pane = 4;
    assert!(validate(&s).is_err());
    let mut s = sample();
    if let LayoutSnap::Split { ratio, .. } = &mut s.workspaces[0].tabs[0].layout {
        *ratio = 1.5;
    }
    assert!(validate(&s).is_err());
    let mut s = sample();
    s.active_workspace = 9;
    assert!(validate(&s).is_err());
}
