//! One integration-test binary for the crate: each file of this folder is a module.

mod phone_state;
mod replay;
mod sim_phone;
mod u2_server;
