//! The device side of the ADB transport protocol over TCP.
//!
//! Wire facts (AOSP `packages/modules/adb` protocol.md, services.md, shell_protocol.h,
//! file_sync_protocol.h): a 24-byte little-endian header (command, arg0, arg1, length,
//! checksum, magic = command ^ 0xffffffff) and a payload. We answer CNXN directly (no
//! AUTH), negotiate version and max payload, acknowledge every WRTE with OKAY and keep at
//! most one WRTE in flight per stream. Checksums are sent and verified only when the
//! negotiated version is 0x01000000 (adb_client speaks that one; the real adb server
//! speaks 0x01000001 which skips them).
//!
//! **Invariant:** nothing a peer sends can panic the phone or stall another connection:
//! a malformed packet ends its own connection, every other connection keeps being served.
//!
//! Files: [`packet`] (framing), [`conn`] (accepting, reading and routing packets),
//! [`stream`] (one stream, flow control), [`service`] (what a stream opens), [`shell`] and
//! [`sync`] (those services), [`shared`] (the phone and the switches every connection
//! shares). The only module that does network I/O.

pub mod conn;
pub mod packet;
pub mod service;
pub mod shared;
pub mod shell;
pub mod stream;
pub mod sync;
pub mod u2;

pub use crate::identity::{DEVICE, MODEL, PRODUCT};
pub(crate) use conn::serve;
pub(crate) use shared::{banner, HangRule, Shared};
