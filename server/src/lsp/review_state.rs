//! The folder's review as last computed (`review.rs` computes it; the folder keeps it; the lenses read it).

use std::sync::Arc;

use super::ext::Pending;
use crate::checkpoint::Bases;

/// The folder's review as last computed: the default scope's bases and what was announced.
#[derive(Default)]
pub struct ReviewState {
    pub bases: Arc<Bases>,
    pub pending: Option<Vec<Pending>>,
}
