//! [`FlowFailure`]: a §7 failure as a flow knows it (status, stable code, step, message,
//! extra diagnostics); the executor adds attempt, version, time and artifact references.

use cmautobuy_contract::{FailureCode, FailureStatus, FlowStep};
use serde_json::{Map, Value};

use crate::reasons::OperatorText;

/// A §7 failure as a flow knows it; the executor adds attempt, version, time and the
/// artifact references.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowFailure {
    pub status: FailureStatus,
    pub code: FailureCode,
    pub step: FlowStep,
    pub message: String,
    /// Extra `diagnostics` fields (the executor adds `artifact_ids` and
    /// `artifact_ref`).
    pub diagnostics: Map<String, Value>,
}

impl FlowFailure {
    pub fn new(
        status: FailureStatus,
        code: FailureCode,
        step: FlowStep,
        message: impl Into<String>,
    ) -> Self {
        FlowFailure {
            status,
            code,
            step,
            message: message.into(),
            diagnostics: Map::new(),
        }
    }

    /// Transient device/app trouble before anything irreversible.
    pub fn retry(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::RetryWait, code, step, message)
    }

    /// Only a human can fix it (login, risk check, no address).
    pub fn manual(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::ManualReview, code, step, message)
    }

    /// A business refusal (wrong goods, sold out, delisted).
    pub fn failed(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::Failed, code, step, message)
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.diagnostics.insert(key.to_string(), value.into());
        self
    }

    /// What this failure tells the operator, when it knows more than its code's default
    /// text ([`crate::reasons::for_code`]): `diagnostics.operator`.
    pub fn explain(self, text: &OperatorText) -> Self {
        self.with("operator", text.to_value())
    }

    /// The operator text: the failure's own, else its code's default.
    pub fn operator_text(&self) -> OperatorText {
        self.diagnostics
            .get("operator")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_else(|| crate::reasons::for_code(&self.code))
    }
}
