//! `head` / `tail [-n N | -N]` as pipe filters: the first or last lines of stdin.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn head(_: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    let n = count(args);
    e.stdout = lines(stdin)
        .into_iter()
        .take(n)
        .collect::<Vec<_>>()
        .concat();
    QUICK_MS
}

pub(crate) fn tail(_: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    let n = count(args);
    let lines = lines(stdin);
    let skip = lines.len().saturating_sub(n);
    e.stdout = lines.into_iter().skip(skip).collect::<Vec<_>>().concat();
    QUICK_MS
}

/// `-n N` or `-N`; 10 by default.
fn count(args: &[&str]) -> usize {
    args.iter()
        .zip(args.iter().skip(1))
        .find(|(a, _)| **a == "-n")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .or_else(|| args.iter().find_map(|a| a.strip_prefix('-')?.parse().ok()))
        .unwrap_or(10)
}

fn lines(stdin: &[u8]) -> Vec<&[u8]> {
    stdin.split_inclusive(|&b| b == b'\n').collect()
}
