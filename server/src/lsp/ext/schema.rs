//! The extension as one JSON Schema document (docs/protocol.schema.json): each notification's params,
//! each request's params and result, each command's argument and result, with their shared definitions.
//! What the server sends is described as it serialises it, what it reads as it deserialises it. A test in
//! tests/tests/protocol_schema.rs keeps the committed file (and the TypeScript made from it) up to date.

use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use super::{
    AskAnswer, AskParams, AskRequest, Command, DiagnosticsAnswer, Query, QueryParams, SaveDocuments,
    SaveDocumentsParams,
};
use tower_lsp_server::ls_types::request::Request;

pub fn document() -> Result<Value, String> {
    let settings = SchemaSettings::draft2020_12();
    let mut sent = settings.clone().for_serialize().into_generator();
    let mut read = settings.for_deserialize().into_generator();

    let mut notifications = Map::new();
    for (method, schema) in super::notification_schemas(&mut sent) {
        notifications.insert(method.into(), schema.to_value());
    }
    let mut commands = Map::new();
    for (name, args, result) in Command::schemas(&mut read, &mut sent) {
        commands.insert(name.into(), json!({"arguments": args, "result": result}));
    }
    // Any LSP result of the kind asked; `diagnostics` answers the one shape stepwise defines.
    let query = json!({
        "params": sent.subschema_for::<QueryParams>(),
        "result": {"anyOf": [read.subschema_for::<DiagnosticsAnswer>(), {}]},
    });
    let save = json!({
        "params": sent.subschema_for::<SaveDocumentsParams>(),
        "result": read.subschema_for::<<SaveDocuments as Request>::Result>(),
    });
    let ask = json!({
        "params": sent.subschema_for::<AskParams>(),
        "result": read.subschema_for::<AskAnswer>(),
    });

    // One set of definitions: a type both sent and read must have one shape.
    let mut defs = sent.take_definitions(true);
    for (name, def) in read.take_definitions(true) {
        match defs.get(&name) {
            Some(other) if *other != def => {
                return Err(format!("{name} is sent and read with different shapes: give one of them its own type"))
            }
            _ => {
                defs.insert(name, def);
            }
        }
    }
    defs.sort_keys();
    Ok(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "stepwise LSP extension",
        "description": "Generated from server/src/lsp/ext (see docs/protocol.md, \"The schema\"); do not edit.",
        "notifications": notifications,
        "requests": {SaveDocuments::METHOD: save, AskRequest::METHOD: ask, Query::METHOD: query},
        "commands": commands,
        "$defs": defs,
    }))
}
