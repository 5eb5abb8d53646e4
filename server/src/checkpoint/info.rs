//! What a checkpoint is taken for (`Meta`) and how `stepwise.checkpoints` lists it (`Info`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Serialize;

use super::{record, Checkpoints};

/// What a checkpoint is taken for.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub run_id: String,
    pub round: u32,
    pub prompt: String,
    /// The plan step in progress.
    pub step: Option<String>,
}

/// A checkpoint as `stepwise.checkpoints` lists it (serialises to the contract's shape).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CheckpointInfo")]
pub struct Info {
    pub id: String,
    pub run_id: String,
    pub round: u32,
    pub prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// UTC, RFC 3339.
    pub time: String,
    /// Every path changed after the checkpoint (what a rewind to it puts back), relative, sorted.
    pub files: Vec<PathBuf>,
}

impl Checkpoints {
    /// The checkpoints, oldest first.
    pub fn list(&self) -> Vec<Info> {
        let mut after = BTreeSet::new();
        let mut out: Vec<Info> = self
            .cps
            .iter()
            .rev()
            .map(|c| {
                after.extend(c.pre.keys().cloned());
                Info {
                    id: c.id.to_string(),
                    run_id: c.run_id.clone(),
                    round: c.round,
                    prompt: c.prompt.clone(),
                    step: c.step.clone(),
                    time: record::rfc3339(c.time),
                    files: after.iter().map(PathBuf::from).collect(),
                }
            })
            .collect();
        out.reverse();
        out
    }
}
