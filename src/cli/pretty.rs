//! JSON text laid out as `serde_json::to_string_pretty` lays it out, straight from the
//! text the server wrote: `--json` output of a large result is not made into values and
//! written again.

/// `raw` (valid JSON, as the server writes it) indented by two spaces a level, each
/// member and element on its own line, `": "` after keys, empty arrays and objects as
/// `[]` and `{}`.
pub fn pretty(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len() + b.len() / 2);
    let mut depth = 0usize;
    let line = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        match c {
            b'"' => {
                // A string, escapes and all, as it is.
                let start = i - 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                out.extend_from_slice(&b[start..i.min(b.len())]);
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                let next = b[i..]
                    .iter()
                    .position(|x| !x.is_ascii_whitespace())
                    .map(|n| i + n);
                out.push(c);
                if next.is_some_and(|n| b[n] == close) {
                    out.push(close);
                    i = next.unwrap_or(i) + 1;
                } else {
                    depth += 1;
                    line(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                line(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(c);
                line(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    // Only whole strings and ASCII are added to what was valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::pretty;
    use serde_json::{json, Value};

    fn same_as_serde(v: &Value) {
        let compact = serde_json::to_string(v).unwrap();
        assert_eq!(
            pretty(&compact),
            serde_json::to_string_pretty(v).unwrap(),
            "{compact}"
        );
        // Whitespace between tokens is dropped first.
        let spaced = serde_json::to_string_pretty(v)
            .unwrap()
            .replace('\n', "\n \t");
        assert_eq!(pretty(&spaced), serde_json::to_string_pretty(v).unwrap());
    }

    #[test]
    fn laid_out_as_serde_json_lays_it_out() {
        for v in [
            json!(null),
            json!(12.5),
            json!("plain"),
            json!([]),
            json!({}),
            json!([[], {}, [[]], [{}], {"a": []}, {"b": {}}]),
            json!({"id": "p1", "argv": ["vim", "a b"], "rows": 22, "ok": true, "x": null}),
            json!([{"s": "quote \" backslash \\ brace { [ , : ] } tab \t nl \n"}, {"u": "é 漢 \u{1}"}]),
            json!({"\"key\"": {"nested": [1, -2, 3e10, {"deep": ["\\"]}]}}),
        ] {
            same_as_serde(&v);
        }
    }

    #[test]
    fn a_large_listing_is_laid_out_the_same() {
        let rows: Vec<Value> = (0..300)
            .map(|i| {
                json!({
                    "id": format!("p{i}"), "title": format!("t{{{i}}}"), "cwd": "/x/y",
                    "argv": (0..i % 4).map(|k| format!("a{k}")).collect::<Vec<_>>(),
                    "label": if i % 3 == 0 { Value::Null } else { json!("l,:\"") },
                    "rows": i, "focused": i % 2 == 0, "mirrors": {}
                })
            })
            .collect();
        same_as_serde(&Value::Array(rows));
    }
}
