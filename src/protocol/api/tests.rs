//! Requests decode as docs/api.md says, or say which param is wrong; nothing panics; the
//! CLI's lines decode back to what it built; docs/api.md lists exactly the methods.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::model::ids::{PaneNo, WorkspaceNo};

/// The error a request line gets.
fn error(line: &str) -> ApiError {
    match decode(line) {
        Ok((_, r)) => panic!("{line} decoded as {r:?}"),
        Err((_, e)) => e,
    }
}

/// The error the params of `method` get.
fn params_error(method: &str, params: Value) -> ApiError {
    error(&json!({ "id": 1, "method": method, "params": params }).to_string())
}

#[test]
fn requests_parse_or_say_why() {
    let (id, r) = decode(r#"{"id":3,"method":"ping"}"#).unwrap();
    assert_eq!((id, r), (json!(3), Request::Ping(NoParams {})));
    let (_, r) = decode(r#"{"id":4,"method":"pane.get","params":null}"#).unwrap();
    assert_eq!(r, Request::PaneGet(PaneTarget { pane: None }));
    assert_eq!(error("[1,2]").code, "invalid_request");
    assert_eq!(error("{").code, "parse_error");
    let (id, e) = decode(r#"{"id":"a","method":"x","params":[1]}"#).unwrap_err();
    assert_eq!((id, e.code), (json!("a"), "invalid_params"));
    let (id, e) = decode(r#"{"id":9,"method":7}"#).unwrap_err();
    assert_eq!((id, e.code), (json!(9), "invalid_request"));
    let (id, e) = decode(r#"{"id":7,"method":"nope"}"#).unwrap_err();
    assert_eq!((id, e.code), (json!(7), "unknown_method"));
    assert!(e.message.contains("\"nope\""), "{}", e.message);
}

#[test]
fn params_decode_into_their_types() {
    let line = r#"{"id":1,"method":"pane.split","params":{"pane":"P3","direction":"down",
        "command":["sh","-c","true"],"cwd":null,"extra":{"ignored":[1]}}}"#;
    let (_, r) = decode(line).unwrap();
    let want = PaneSplit {
        pane: Some(PaneNo(3)),
        direction: Some(SplitDirection::Down),
        cwd: None,
        command: Some(Strings(vec!["sh".into(), "-c".into(), "true".into()])),
    };
    assert_eq!(r, Request::PaneSplit(want));
    let (_, r) = decode(r#"{"method":"workspace.focus","params":{"workspace":2}}"#).unwrap();
    let want = WorkspaceTarget {
        workspace: Some(WorkspaceNo(2)),
    };
    assert_eq!(r, Request::WorkspaceFocus(want));
}

#[test]
fn wrong_params_are_named_with_what_they_take() {
    let cases = [
        (
            "pane.split",
            json!({"direction": 5}),
            "\"direction\" must be right or down, got 5",
        ),
        (
            "pane.split",
            json!({"direction": "up"}),
            "\"direction\" must be right or down, got \"up\"",
        ),
        (
            "pane.resize",
            json!({"direction": "in"}),
            "must be left, right, up or down",
        ),
        (
            "pane.get",
            json!({"pane": [1]}),
            "\"pane\" must be a pane id like p3, got [1]",
        ),
        (
            "pane.get",
            json!({"pane": "t3"}),
            "\"pane\" must be a pane id like p3, got \"t3\"",
        ),
        (
            "tab.list",
            json!({"workspace": "x"}),
            "\"workspace\" must be a workspace id like w1",
        ),
        (
            "tab.close",
            json!({"tab": true}),
            "\"tab\" must be a tab id like t2, got true",
        ),
        (
            "pane.read",
            json!({"lines": -3}),
            "\"lines\" must be a non-negative integer, got -3",
        ),
        (
            "pane.read",
            json!({"lines": "x"}),
            "\"lines\" must be a non-negative integer",
        ),
        (
            "pane.read",
            json!({"ansi": 1}),
            "\"ansi\" must be true or false, got 1",
        ),
        (
            "pane.keys",
            json!({"keys": "Enter"}),
            "\"keys\" must be a list of strings, got \"Enter\"",
        ),
        (
            "pane.keys",
            json!({"keys": ["a", 1]}),
            "\"keys\" must be a list of strings, got [\"a\",1]",
        ),
        (
            "pane.send",
            json!({"text": 5}),
            "\"text\" must be a string, got 5",
        ),
        (
            "workspace.create",
            json!({"cwd": 1}),
            "\"cwd\" must be a path, got 1",
        ),
        ("pane.rename", json!({}), "missing \"name\" (a string)"),
        (
            "pane.rename",
            json!({"name": null}),
            "missing \"name\" (a string)",
        ),
        (
            "pane.keys",
            json!({}),
            "missing \"keys\" (a list of strings)",
        ),
        (
            "pane.resize",
            json!({}),
            "missing \"direction\" (left, right, up or down)",
        ),
        (
            "agent.report",
            json!({"agent": "claude"}),
            "missing \"source\" (a string)",
        ),
    ];
    for (method, params, want) in cases {
        let e = params_error(method, params.clone());
        assert_eq!(e.code, "invalid_params", "{method} {params}");
        assert!(
            e.message.contains(want),
            "{method} {params}: {:?}",
            e.message
        );
    }
}

#[test]
fn live_handoff_keeps_its_own_error_code() {
    let e = params_error("server.live_handoff", json!({"binary": 5}));
    assert_eq!(e.code, "bad_params");
    assert!(
        e.message.contains("\"binary\" must be a path"),
        "{}",
        e.message
    );
    let e = params_error("server.live_handoff", json!({"expected_protocol": "1"}));
    assert_eq!(e.code, "bad_params");
    assert!(e.message.contains("expected_protocol"), "{}", e.message);
}

/// A value of every request, as the CLI might build it.
fn samples() -> Vec<Request> {
    let pane = Some(PaneNo(2));
    let mut all = vec![
        Request::LiveHandoff(LiveHandoff {
            binary: Some("/usr/bin/herdr".into()),
            expected_version: Some("0.1.0".into()),
            expected_protocol: Some(1),
        }),
        Request::PaneResize(PaneResize {
            pane,
            direction: Edge::Up,
            cells: Some(3),
        }),
        Request::PaneWait(PaneWait {
            pane,
            exit: true,
            timeout_ms: Some(10),
            ..Default::default()
        }),
        Request::PaneRead(PaneRead {
            pane,
            lines: Some(5),
            ansi: true,
        }),
        Request::AgentReport(AgentReport {
            pane,
            source: "herdr:claude".into(),
            agent: "claude".into(),
            seq: Some(7),
            ..Default::default()
        }),
        Request::MachineReconnect(super::MachineTarget {
            machine: "gpu".into(),
        }),
        Request::MachineOpen(super::MachineOpen {
            machine: "gpu".into(),
            pane,
            tab: None,
        }),
        Request::PaneStream(super::PaneStream {
            pane,
            rows: 40,
            cols: 120,
            paused: true,
            resume: Some(json!({ "run": "12", "at": 34 })),
        }),
        Request::PaneWrite(super::PaneWrite {
            pane,
            data: "aGk=".into(),
        }),
        Request::MachineCall(super::MachineCall {
            machine: "gpu".into(),
            request: json!({ "method": "pane.list", "params": { "tab": "t2" } }),
        }),
    ];
    // The rest with default params: each method's empty params decode to them.
    for method in Request::METHODS {
        if all.iter().any(|r| r.method() == *method) {
            continue;
        }
        let line = json!({ "method": method, "params": {"name": "n", "text": "t",
            "keys": ["Enter"], "source": "s", "agent": "a"} });
        match decode(&line.to_string()) {
            Ok((_, r)) => all.push(r),
            Err((_, e)) => panic!("{method}: {e:?}"),
        }
    }
    all
}

#[test]
fn what_the_cli_sends_decodes_to_what_it_built() {
    let all = samples();
    assert_eq!(all.len(), Request::METHODS.len());
    for request in all {
        let line = encode(7, &request).unwrap();
        assert!(!line.contains("null"), "{line}");
        let (id, back) = decode(&line).unwrap();
        assert_eq!((id, &back), (json!(7), &request), "{line}");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["method"], request.method(), "{line}");
    }
}

#[test]
fn the_wire_form_is_as_documented() {
    let split = Request::PaneSplit(PaneSplit {
        pane: Some(PaneNo(3)),
        direction: Some(SplitDirection::Down),
        ..Default::default()
    });
    assert_eq!(
        encode(5, &split).unwrap(),
        r#"{"id":5,"method":"pane.split","params":{"pane":"p3","direction":"down"}}"#
    );
    assert_eq!(
        encode(1, &Request::ServerStatus(NoParams {})).unwrap(),
        r#"{"id":1,"method":"server.status","params":{}}"#
    );
}

/// The methods docs/api.md documents: the first cell of each row of its `| method |`
/// tables.
fn documented_methods() -> Vec<String> {
    let doc = include_str!("../../../docs/api.md");
    let mut out = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "method" {
            in_table = true;
        } else if in_table && !first.starts_with('-') {
            out.push(first.trim_matches('`').to_string());
        }
    }
    out
}

#[test]
fn docs_list_every_method_and_no_other() {
    let documented = documented_methods();
    let unique: BTreeSet<&str> = documented.iter().map(String::as_str).collect();
    assert_eq!(unique.len(), documented.len(), "a method documented twice");
    let known: BTreeSet<&str> = Request::METHODS.iter().copied().collect();
    let missing: Vec<_> = known.difference(&unique).collect();
    let unknown: Vec<_> = unique.difference(&known).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/api.md lacks {missing:?}; documents methods that do not exist: {unknown:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_line_parses_or_errors_without_panicking(line in "\\PC{0,200}") {
        let _ = decode(&line);
    }

    #[test]
    fn any_json_value_parses_or_errors(v in arb_json()) {
        let line = v.to_string();
        match decode(&line) {
            Ok((_, r)) => {
                prop_assert_eq!(Some(r.method()), v.get("method").and_then(|m| m.as_str()));
            }
            Err((_, e)) => prop_assert!(!e.message.is_empty()),
        }
    }

    #[test]
    fn any_params_of_a_method_decode_or_name_what_is_wrong(
        method in prop::sample::select(Request::METHODS),
        params in prop::collection::btree_map(
            prop::sample::select(PARAM_NAMES),
            arb_json(),
            0..5,
        ),
    ) {
        let params: serde_json::Map<String, Value> =
            params.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let line = json!({ "id": 1, "method": method, "params": params }).to_string();
        match decode(&line) {
            Ok((_, r)) => prop_assert_eq!(r.method(), method),
            Err((_, e)) => {
                prop_assert!(["invalid_params", "bad_params"].contains(&e.code), "{:?}", e);
                prop_assert!(e.message.contains('"'), "{:?}", e);
            }
        }
    }
}

/// Every param name some method takes, for the property above to hit.
const PARAM_NAMES: &[&str] = &[
    "pane",
    "tab",
    "workspace",
    "name",
    "cwd",
    "direction",
    "command",
    "zoom",
    "cells",
    "text",
    "keys",
    "delay_ms",
    "lines",
    "ansi",
    "output",
    "exit",
    "agent_state",
    "timeout_ms",
    "state",
    "source",
    "agent",
    "session_id",
    "seq",
    "binary",
    "expected_protocol",
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "[a-z.]{0,12}".prop_map(Value::String),
        prop::sample::select(Request::METHODS).prop_map(|m| json!(m)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_string()),
                    Just("method".to_string()),
                    Just("params".to_string()),
                    "[a-z]{1,5}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
