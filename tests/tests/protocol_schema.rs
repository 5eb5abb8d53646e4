//! The LSP extension's generated files are up to date: docs/protocol.schema.json (the JSON Schema of every
//! `stepwise/*` method and `stepwise.*` command, from the Rust types in server/src/lsp/ext) and the
//! TypeScript the VS Code extension imports (editors/vscode/src/protocol/generated.ts, made from that
//! schema here). `UPDATE=1 cargo test -p stepwise-tests --test protocol_schema` writes them.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Map, Value};

const SCHEMA: &str = "docs/protocol.schema.json";
const TYPESCRIPT: &str = "editors/vscode/src/protocol/generated.ts";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn schema() -> Value {
    stepwise::lsp::ext::schema::document().expect("the extension's types make one schema")
}

/// Writes `text` to `rel` with UPDATE=1; otherwise fails when the committed file differs.
fn check(rel: &str, text: &str) {
    let path = repo().join(rel);
    if std::env::var_os("UPDATE").is_some_and(|v| v == "1") {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{rel} is out of date with the Rust types in server/src/lsp/ext: \
         run `UPDATE=1 cargo test -p stepwise-tests --test protocol_schema` and commit it"
    );
}

#[test]
fn the_committed_schema_is_generated_from_the_rust_types() {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap();
    text.push('\n');
    check(SCHEMA, &text);
}

#[test]
fn the_committed_typescript_is_generated_from_the_schema() {
    check(TYPESCRIPT, &typescript(&schema()));
}

#[test]
fn the_schema_covers_every_method_and_command_the_server_announces() {
    let s = schema();
    let names = |key: &str| s[key].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let ext = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(names("notifications"), ext(stepwise::lsp::ext::NOTIFICATIONS));
    assert_eq!(names("requests"), ext(stepwise::lsp::ext::REQUESTS));
    assert_eq!(names("commands"), ext(stepwise::lsp::COMMANDS));
    // Every reference resolves.
    let defs = s["$defs"].as_object().unwrap();
    let text = s.to_string();
    for r in text.split("\"$ref\":\"#/$defs/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(defs.contains_key(name), "unresolved reference {name}");
    }
}

#[test]
fn the_typescript_of_a_schema_reads_as_written() {
    let s = serde_json::json!({
        "notifications": {"x/n": {"$ref": "#/$defs/N"}},
        "requests": {},
        "commands": {"x.c": {"arguments": {"$ref": "#/$defs/A"}, "result": {"type": "null"}}},
        "$defs": {
            "N": {"type": "object", "description": "A note.", "properties": {
                "a": {"type": "string"},
                "b": {"type": ["integer", "null"]},
                "c": {"type": "array", "items": {"$ref": "#/$defs/E"}},
            }, "required": ["a", "c"]},
            "E": {"oneOf": [{"type": "string", "const": "one", "description": "The first."}, {"type": "string", "enum": ["two"]}]},
            "A": {"type": "object", "properties": {"m": {"anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}]}}},
        }
    });
    let ts = typescript(&s);
    assert!(ts.contains("/** A note. */\nexport interface N {\n  a: string;\n  b?: number;\n  c: E[];\n}"), "{ts}");
    assert!(ts.contains("export type E = 'one' | 'two';"), "{ts}");
    assert!(ts.contains("export interface A {\n  m?: E;\n}"), "{ts}");
    assert!(ts.contains("  'x/n': N;"), "{ts}");
    assert!(ts.contains("  'x.c': { arguments: A; result: null };"), "{ts}");
}

/// TypeScript for the subset of JSON Schema that schemars generates for these types.
fn typescript(schema: &Value) -> String {
    let mut out = String::from(
        "// Generated from docs/protocol.schema.json (the Rust types in server/src/lsp/ext) by\n\
         // tests/tests/protocol_schema.rs: `UPDATE=1 cargo test -p stepwise-tests --test protocol_schema`.\n\
         // Do not edit.\n",
    );
    let empty = Map::new();
    let defs = schema["$defs"].as_object().unwrap_or(&empty);
    for (name, def) in defs {
        out.push('\n');
        doc(&mut out, def, "");
        match def.get("properties") {
            Some(_) if def.get("type") == Some(&Value::from("object")) => {
                let _ = writeln!(out, "export interface {name} {}", object(def, ""));
            }
            _ => {
                let _ = writeln!(out, "export type {name} = {};", ty(def, ""));
            }
        }
    }
    let section = |out: &mut String, title: &str, key: &str, entry: &dyn Fn(&Value) -> String| {
        let _ = write!(out, "\n/** {title} */\nexport interface {} {{\n", upper(key));
        for (name, v) in schema[key].as_object().unwrap_or(&empty) {
            let _ = writeln!(out, "  '{name}': {};", entry(v));
        }
        out.push_str("}\n");
    };
    section(&mut out, "Notifications from the server: method to params.", "notifications", &|v| ty(v, "  "));
    section(&mut out, "Requests from the server: method to params and result.", "requests", &|v| {
        format!("{{ params: {}; result: {} }}", ty(&v["params"], "  "), ty(&v["result"], "  "))
    });
    section(&mut out, "`workspace/executeCommand` commands: name to argument and result.", "commands", &|v| {
        format!("{{ arguments: {}; result: {} }}", ty(&v["arguments"], "  "), ty(&v["result"], "  "))
    });
    out
}

fn upper(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn doc(out: &mut String, v: &Value, indent: &str) {
    if let Some(d) = v.get("description").and_then(Value::as_str) {
        let d = d.replace("*/", "* /");
        if d.contains('\n') {
            let _ = writeln!(out, "{indent}/**");
            for line in d.lines() {
                let _ = writeln!(out, "{indent} * {line}");
            }
            let _ = writeln!(out, "{indent} */");
        } else {
            let _ = writeln!(out, "{indent}/** {d} */");
        }
    }
}

fn object(v: &Value, indent: &str) -> String {
    let required: Vec<&str> = v
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, p) in v["properties"].as_object().into_iter().flatten() {
        doc(&mut out, p, &inner);
        // An optional field is left out when absent (the server never sends it as null; nor need an editor).
        let (optional, p) = match required.contains(&name.as_str()) {
            true => ("", p.clone()),
            false => ("?", without_null(p)),
        };
        let _ = writeln!(out, "{inner}{name}{optional}: {};", ty(&p, &inner));
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// `v` without its `null` alternative (`["string", "null"]`, `anyOf: [X, {"type": "null"}]`).
fn without_null(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(Value::Array(types)) = v.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            v["type"] = types[0].clone();
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = v.get_mut(key) {
            alts.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
            if alts.len() == 1 {
                return alts[0].clone();
            }
        }
    }
    v
}

fn ty(v: &Value, indent: &str) -> String {
    match v {
        Value::Bool(true) => return "unknown".into(),
        Value::Bool(false) => return "never".into(),
        _ => {}
    }
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(c) = v.get("const") {
        return literal(c);
    }
    if let Some(e) = v.get("enum").and_then(Value::as_array) {
        return e.iter().map(literal).collect::<Vec<_>>().join(" | ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = v.get(key).and_then(Value::as_array) {
            return alts.iter().map(|a| ty(a, indent)).collect::<Vec<_>>().join(" | ");
        }
    }
    match &v["type"] {
        Value::Array(types) => types
            .iter()
            .map(|t| {
                let mut one = v.clone();
                one["type"] = t.clone();
                ty(&one, indent)
            })
            .collect::<Vec<_>>()
            .join(" | "),
        Value::String(t) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match v.get("items") {
                Some(items) => {
                    let item = ty(items, indent);
                    if item.contains(' ') {
                        format!("({item})[]")
                    } else {
                        format!("{item}[]")
                    }
                }
                None => "unknown[]".into(),
            },
            "object" if v.get("properties").is_some() => object(v, indent),
            "object" => "Record<string, unknown>".into(),
            other => panic!("no TypeScript for the schema type {other}"),
        },
        _ => "unknown".into(),
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        other => other.to_string(),
    }
}
