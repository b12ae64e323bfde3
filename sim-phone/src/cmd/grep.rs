//! `grep [-E|-F] [-i] [-v] [-c] [-q] PATTERN [FILE...]` with fixed-string matching; under
//! `-E` (or with `\|` in a basic pattern) alternatives separated by `|` each match as a
//! fixed string. Enough for `dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'`.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    grep(args, stdin, d, e);
    QUICK_MS
}

fn grep(args: &[&str], stdin: &[u8], d: &Device, e: &mut Exec) {
    let (mut ext, mut icase, mut invert, mut count, mut quiet) =
        (false, false, false, false, false);
    let mut rest: Vec<&str> = Vec::new();
    for a in args {
        match *a {
            s if s.starts_with('-') && s.len() > 1 && rest.is_empty() => {
                for c in s[1..].chars() {
                    match c {
                        'E' => ext = true,
                        'F' => ext = false,
                        'i' => icase = true,
                        'v' => invert = true,
                        'c' => count = true,
                        'q' => quiet = true,
                        _ => {}
                    }
                }
            }
            s => rest.push(s),
        }
    }
    let Some((pattern, files)) = rest.split_first() else {
        e.stderr = b"usage: grep [-EFicqv] PATTERN [FILE...]\n".to_vec();
        e.code = 2;
        return;
    };
    let norm = |s: &str| {
        if icase {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let alts: Vec<String> = if ext {
        pattern.split('|').map(norm).collect()
    } else {
        pattern.split("\\|").map(norm).collect()
    };
    let mut input = Vec::new();
    if files.is_empty() {
        input.extend_from_slice(stdin);
    } else {
        for f in files {
            match d.read_file(f) {
                Some(b) => input.extend_from_slice(&b),
                None => {
                    e.stderr.extend_from_slice(
                        format!("grep: {f}: No such file or directory\n").as_bytes(),
                    );
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&input);
    let mut n = 0;
    for line in text.lines() {
        let l = norm(line);
        if alts.iter().any(|a| l.contains(a.as_str())) != invert {
            n += 1;
            if !count && !quiet {
                e.stdout.extend_from_slice(line.as_bytes());
                e.stdout.push(b'\n');
            }
        }
    }
    if count && !quiet {
        e.stdout = format!("{n}\n").into_bytes();
    }
    e.code = if n > 0 { 0 } else { 1 };
}
