//! The editor's settings: `initializationOptions`, pushed `didChangeConfiguration`, and the `stepwise`
//! section of `workspace/configuration` per folder, read key by key.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::ls_types::{ConfigurationItem, MessageType};

use super::folder::Folder;
use super::notify::Outgoing;
use super::shared::Shared;
use crate::config::Overrides;
use crate::locks;

impl Shared {
    /// Settings from the editor; each bad key is reported to the user by name and the others kept.
    pub fn settings_from(&self, v: &Value) -> Overrides {
        let (o, bad) = parse_settings(v);
        for problem in bad {
            self.tell(Outgoing::Message(MessageType::WARNING, format!("stepwise: ignoring the setting {problem}")));
        }
        o
    }

    /// Settings pushed by the client (`didChangeConfiguration`) join those of `initializationOptions`.
    pub fn push_settings(&self, v: &Value) {
        let o = self.settings_from(v);
        if o != Overrides::default() {
            let mut s = locks::write(&self.init_settings);
            *s = s.merged(&o);
        }
    }

    /// Asks for the configuration in the background: a notification handler that waited for the
    /// client's answer would hold up `exit` (tower-lsp finishes every handler in flight, and reads no
    /// more answers once `exit` has arrived) for as long as the request's timeout.
    pub fn fetch_configuration_later(self: Arc<Self>) {
        if !self.caps().configuration {
            return;
        }
        // Taken now, before the handler returns, so a run that comes next waits for the answer (at
        // most the request's timeout).
        let pending = self.config_pending.clone();
        match pending.clone().try_write_owned() {
            Ok(guard) => tokio::spawn(async move {
                self.fetch_configuration().await;
                drop(guard);
            }),
            Err(_) => tokio::spawn(async move {
                let _guard = pending.write_owned().await;
                self.fetch_configuration().await;
            }),
        };
    }

    async fn fetch_configuration(&self) {
        let folders: Vec<Arc<Folder>> = self.folders.iter().map(|f| f.clone()).collect();
        if folders.is_empty() {
            return;
        }
        let items = folders
            .iter()
            .map(|f| ConfigurationItem { scope_uri: f.uri.parse().ok(), section: Some("stepwise".into()) })
            .collect();
        match tokio::time::timeout(Duration::from_secs(10), self.client.configuration(items)).await {
            Ok(Ok(values)) => {
                for (f, v) in folders.iter().zip(values) {
                    *locks::write(&f.settings) = self.settings_from(&v);
                }
            }
            Ok(Err(e)) => tracing::warn!("workspace/configuration failed: {}", e.message),
            Err(_) => tracing::warn!("workspace/configuration not answered in time"),
        }
    }
}

/// Settings as an object, possibly nested under `stepwise`, read key by key: one wrongly typed value
/// (`"maxRounds": "10"`) loses only itself. Returns the settings and a line per bad key.
pub fn parse_settings(v: &Value) -> (Overrides, Vec<String>) {
    let v = v.get("stepwise").unwrap_or(v);
    let map = match v {
        Value::Null => return (Overrides::default(), Vec::new()),
        Value::Object(map) => map,
        other => return (Overrides::default(), vec![format!("section: expected an object, got {other}")]),
    };
    let mut good = serde_json::Map::new();
    let mut bad = Vec::new();
    for (k, val) in map {
        let one = Value::Object([(k.clone(), val.clone())].into_iter().collect());
        match serde_json::from_value::<Overrides>(one) {
            Ok(_) => {
                good.insert(k.clone(), val.clone());
            }
            Err(e) => bad.push(format!("{k}: {e}")),
        }
    }
    (serde_json::from_value(Value::Object(good)).unwrap_or_default(), bad)
}

/// `stateDir` of `initializationOptions` (optionally under `stepwise`): a per-server state directory.
pub fn init_state_dir(v: &Value) -> Option<PathBuf> {
    let v = v.get("stepwise").unwrap_or(v);
    v.get("stateDir").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::parse_settings;
    use crate::host::ApprovalMode;

    #[test]
    fn an_unknown_approval_is_reported_by_name_not_taken_for_ask() {
        let (o, bad) = parse_settings(&serde_json::json!({"approval": "sometimes", "maxRounds": 3}));
        assert_eq!(o.approval, None);
        assert_eq!(o.max_rounds, Some(3));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("approval: unknown approval 'sometimes'"), "{bad:?}");
        let (o, bad) = parse_settings(&serde_json::json!({"stepwise": {"approval": "Always"}}));
        assert_eq!((o.approval, bad.len()), (Some(ApprovalMode::Auto), 0));
    }
}
