//! uiautomator2's resident UI server, as the phone runs it: the pinned jar it
//! starts only from ([`jar`]), the server's lifetime and fault knobs on the phone
//! ([`state`]), its HTTP/1.1 framing ([`http`]) and its JSON-RPC 2.0 methods on the same
//! app model as the shell's `input` and `uiautomator dump` ([`rpc`]). The transport side
//! (the `app_process` stream it lives on, the `tcp:PORT` streams that reach it) is in
//! `adb/`. [`jpeg`] encodes `takeScreenshot`'s picture. Facts and sources:
//! `docs/u2-server.md`.

pub mod http;
pub mod jar;
pub mod jpeg;
pub mod rpc;
pub mod state;

pub use state::{CallFault, ScheduledFault, U2Faults, U2State};
