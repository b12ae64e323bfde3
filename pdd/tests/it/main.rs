//! One integration-test binary for the crate: each file of this folder is a module.

mod screens;
