//! [`Endpoint`]: the client endpoints of the contract, as fault plans target them and
//! the journal names them.

use serde::{Deserialize, Serialize};

/// The client endpoints of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    Registration,
    Claim,
    Result,
    Failure,
    SpecResolution,
}

impl Endpoint {
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Registration => "registration",
            Endpoint::Claim => "claim",
            Endpoint::Result => "result",
            Endpoint::Failure => "failure",
            Endpoint::SpecResolution => "spec_resolution",
        }
    }
}
