//! The `u2` device backend: dumps and input through uiautomator2's resident
//! UI server (`u2.jar`, `com.wetest.uia2.Main`) instead of a `uiautomator dump` /
//! `input` process per call. Protocol facts: `docs/u2-server.md`.
//!
//! # What lives where
//! - [`http`] — our HTTP/1.1 client codec (pure): the request, the answer framed by
//!   `Content-Length` (or chunked), truncation and malformed heads typed.
//! - [`rpc`] — JSON-RPC 2.0 (pure): the call body, the result or the error object.
//! - [`transport`] — streams through the adb server's smart socket
//!   (`host:transport:SERIAL`, then `tcp:PORT` / `shell:` / `sync:`) on a plain
//!   `TcpStream` whose reads and writes are bounded by the call's deadline.
//! - [`jar`] — where the jar is (config `u2_jar`, beside the binary, the `uiautomator2`
//!   Python package) and its sha256.
//! - [`server`] — one server process: push, `app_process` on a stream a thread keeps
//!   open, `/ping` readiness, calls, stop.
//! - [`device`] — [`U2Device`]: the `Device` trait on the server, with the ADB device
//!   beside it for shell, deep links and screenshots; restart once, then fall back.
//!
//! Direct TCP (`tcp:HOST:PORT`) has no `u2`: `adb_client` opens no raw device stream
//! there, so `auto` uses uiautomator and `u2` is a device error.

pub mod device;
pub mod error;
pub mod http;
pub mod jar;
pub mod rpc;
pub mod server;
pub mod transport;

pub use device::{U2Device, U2Options, DEFAULT_PORT};
pub use server::U2Timing;

pub use error::U2Error;
