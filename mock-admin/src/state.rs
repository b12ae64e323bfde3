//! [`Inner`]: the state every handle and handler shares — the database, the
//! configuration, fault plans, the journal and the operator's spec-resolution overrides.

use crate::config::MockAdminConfig;
use crate::db;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::journal::Journal;
use crate::resolver::SpecOverride;
use cmautobuy_contract::AdminErrorCode;
use std::sync::{Arc, Mutex};

/// What the router's handlers hold.
pub(crate) type AppState = Arc<Inner>;

/// Shared state behind every handle.
pub struct Inner {
    pub(crate) db: db::Db,
    pub(crate) cfg: MockAdminConfig,
    pub(crate) faults: Faults,
    pub(crate) journal: Journal,
    overrides: Mutex<Vec<SpecOverride>>,
}

impl Inner {
    /// Fresh state around an opened database: no faults, an empty journal, no overrides.
    pub(crate) fn new(db: db::Db, cfg: MockAdminConfig) -> Inner {
        Inner {
            db,
            cfg,
            faults: Faults::default(),
            journal: Journal::default(),
            overrides: Mutex::new(Vec::new()),
        }
    }

    /// The override for a task, else for its goods.
    pub(crate) fn spec_override(&self, task_id: &str, goods_id: &str) -> Option<SpecOverride> {
        let list = self.overrides.lock().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .rev()
            .find(|o| o.task_id.as_deref() == Some(task_id))
            .or_else(|| {
                list.iter()
                    .rev()
                    .find(|o| o.task_id.is_none() && o.goods_id.as_deref() == Some(goods_id))
            })
            .cloned()
    }

    pub(crate) fn add_override(&self, o: SpecOverride) -> Result<(), ApiError> {
        if o.task_id.is_some() == o.goods_id.is_some() {
            return Err(ApiError::new(
                AdminErrorCode::InvalidBody,
                "give exactly one of task_id and goods_id",
            ));
        }
        let mut list = self.overrides.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|x| !(x.task_id == o.task_id && x.goods_id == o.goods_id));
        list.push(o);
        Ok(())
    }

    pub(crate) fn overrides(&self) -> Vec<SpecOverride> {
        self.overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn clear_overrides(&self) {
        self.overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
