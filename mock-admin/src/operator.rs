//! [`Operator`]: typed in-process access to the operator API — the same operations as
//! `/api/v1/admin` (the resource files under `http/operator/`), without HTTP.

use crate::error::OperatorError;
use crate::faults::{FaultPlan, InstalledFault};
use crate::http::operator::{clients, products, spec_resolutions, tasks};
use crate::journal::JournalEntry;
use crate::resolver::SpecOverride;
use crate::state::Inner;
use cmautobuy_contract::AdminErrorCode;
use serde_json::Value;
use std::sync::Arc;

/// In-process operator access: the same operations as `/api/v1/admin`, typed.
#[derive(Clone)]
pub struct Operator {
    inner: Arc<Inner>,
}

impl Operator {
    pub(crate) fn new(inner: Arc<Inner>) -> Operator {
        Operator { inner }
    }

    /// `POST /api/v1/admin/tasks`; returns `{"task": {...}}`.
    pub async fn create_task(&self, body: Value) -> Result<Value, OperatorError> {
        Ok(tasks::create(&self.inner, &body).await?)
    }

    /// `GET /api/v1/admin/tasks/{id}`: `{"task", "claims", "results"}`.
    pub async fn get_task(&self, id: &str) -> Result<Value, OperatorError> {
        Ok(tasks::get(&self.inner, id.to_string()).await?)
    }

    /// `GET /api/v1/admin/tasks`: `{"tasks": [...]}`.
    pub async fn list_tasks(&self) -> Result<Value, OperatorError> {
        Ok(tasks::list(&self.inner).await?)
    }

    pub async fn cancel_task(&self, id: &str) -> Result<Value, OperatorError> {
        Ok(tasks::cancel(&self.inner, id.to_string()).await?)
    }

    /// Reassigns to a client, or back to the pool with `None`.
    pub async fn reassign_task(
        &self,
        id: &str,
        client_id: Option<&str>,
    ) -> Result<Value, OperatorError> {
        let client = client_id.map(str::to_string);
        Ok(tasks::reassign(&self.inner, id.to_string(), client).await?)
    }

    /// `GET /api/v1/admin/clients`: `{"clients": [...]}` with derived `online`.
    pub async fn clients(&self) -> Result<Value, OperatorError> {
        Ok(clients::list(&self.inner).await?)
    }

    /// `GET /api/v1/admin/products`: the `pdd_products` rows.
    pub async fn products(&self) -> Result<Value, OperatorError> {
        Ok(products::list(&self.inner).await?)
    }

    /// `GET /api/v1/admin/spec-resolutions`: the stored §7.1 records.
    pub async fn spec_resolutions(&self) -> Result<Value, OperatorError> {
        Ok(spec_resolutions::list(&self.inner).await?)
    }

    /// Installs a fault plan; returns its id.
    pub fn set_fault(&self, plan: FaultPlan) -> Result<u64, OperatorError> {
        self.inner.faults.add(plan).map_err(|m| OperatorError {
            code: AdminErrorCode::InvalidBody,
            status: 400,
            message: m,
        })
    }

    pub fn faults(&self) -> Vec<InstalledFault> {
        self.inner.faults.list()
    }

    pub fn clear_faults(&self) {
        self.inner.faults.clear()
    }

    /// Forces the §7.1 outcome for a task or a goods (replaces an earlier override of
    /// the same scope).
    pub fn set_spec_override(&self, o: SpecOverride) -> Result<(), OperatorError> {
        Ok(self.inner.add_override(o)?)
    }

    pub fn clear_spec_overrides(&self) {
        self.inner.clear_overrides()
    }

    /// Every client request so far, in arrival order of completion.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.inner.journal.entries()
    }

    pub fn clear_journal(&self) {
        self.inner.journal.clear()
    }
}
