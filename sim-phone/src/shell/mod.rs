//! The simulated `/system/bin/sh`: [`parse()`] splits a command line (nothing is ever
//! executed), [`run`] walks the parsed line — sequences, `&&`/`||`, pipes, redirections,
//! `$?` — and hands each command to its builtin in [`crate::cmd`].

pub mod parse;
pub mod run;

pub use parse::{parse, render, Join, Line, Piece, Simple};
