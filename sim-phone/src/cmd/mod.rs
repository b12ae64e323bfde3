//! The builtins of the simulated shell, one file per command, and the table that routes a
//! command's name to its builtin. **Nothing is ever executed**: a name either appears in
//! `BUILTINS` or fails with exit 127, like a missing program.
//!
//! Every builtin has the signature `Builtin`: it reads its arguments (and the previous
//! command's stdout when piped), acts on the phone, fills the [`Exec`] and returns how long
//! a real phone would have taken (ms).

pub mod am;
pub mod app_process;
pub mod cat;
#[allow(clippy::module_inception)]
pub mod cmd;
pub mod date;
pub mod dumpsys;
pub mod echo;
pub mod getprop;
pub mod grep;
pub mod head_tail;
pub mod id;
pub mod input;
pub mod ls;
pub mod mkdir;
pub mod monkey;
pub mod pm;
pub mod rm;
pub mod screencap;
pub mod sh;
pub mod sha256sum;
pub mod sleep;
pub mod status;
pub mod uiautomator;
pub mod wc;
pub mod wm;

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

/// A builtin: (phone, arguments without the name, stdin, output) → simulated ms.
pub(crate) type Builtin = fn(&mut Device, &[&str], &[u8], &mut Exec) -> u64;

/// Every command name the shell knows (full paths where scripts use them).
pub(crate) const BUILTINS: &[(&str, Builtin)] = &[
    ("true", status::truth),
    ("sh", sh::run),
    ("/system/bin/sh", sh::run),
    (":", status::truth),
    ("false", status::falsity),
    ("echo", echo::run),
    ("uiautomator", uiautomator::run),
    ("/system/bin/uiautomator", uiautomator::run),
    ("input", input::run),
    ("/system/bin/input", input::run),
    ("am", am::run),
    ("/system/bin/am", am::run),
    ("monkey", monkey::run),
    ("screencap", screencap::run),
    ("/system/bin/screencap", screencap::run),
    ("grep", grep::run),
    ("head", head_tail::head),
    ("tail", head_tail::tail),
    ("wc", wc::run),
    ("cat", cat::run),
    ("rm", rm::run),
    ("ls", ls::run),
    ("mkdir", mkdir::run),
    ("sleep", sleep::run),
    ("date", date::run),
    ("id", id::run),
    ("getprop", getprop::run),
    ("wm", wm::run),
    ("pm", pm::run),
    ("dumpsys", dumpsys::run),
    ("cmd", cmd::run),
    ("/system/bin/cmd", cmd::run),
    ("app_process", app_process::run),
    ("/system/bin/app_process", app_process::run),
    ("sha256sum", sha256sum::run),
];

/// `NAME=value`: an assignment word before a command (its environment).
fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let mut cs = name.chars();
    let first = cs.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some((name, value))
}

/// Run one command (`argv[0]` names it) with `stdin`; (its output, simulated ms).
/// Leading `NAME=value` words are the command's environment (`d.cmd_env` while it runs).
pub(crate) fn run(d: &mut Device, argv: &[String], stdin: &[u8]) -> (Exec, u64) {
    let env: Vec<(String, String)> = argv
        .iter()
        .map_while(|w| assignment(w))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let argv = &argv[env.len()..];
    let Some(name) = argv.first() else {
        // Assignments alone set shell variables: nothing to run.
        return (Exec::default(), QUICK_MS);
    };
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let mut e = Exec::default();
    d.cmd_env = env;
    let ms = match BUILTINS.iter().find(|(n, _)| n == name) {
        Some((_, builtin)) => builtin(d, &args, stdin, &mut e),
        None => {
            e.stderr = format!("/system/bin/sh: {name}: inaccessible or not found\n").into_bytes();
            e.code = 127;
            QUICK_MS
        }
    };
    d.cmd_env.clear();
    (e, ms)
}
