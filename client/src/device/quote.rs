//! Shell quoting and exit-status recovery. Pure functions, no I/O.
//!
//! Every command the client sends to the phone is an argv, turned into one line for
//! `/system/bin/sh -c` by [`command_line`], which quotes every word with [`quote`]. No
//! other code builds command lines, so a goods URL from the network — `;`, `$(…)`,
//! backticks, quotes, spaces, newlines and all — is one word to the phone's shell and
//! runs nothing.
//!
//! The exit status is recovered by appending `; echo <MARKER>$?` ([`with_status`]) and
//! cutting the marker back out ([`split_status`]): `adb_client` loses the status over
//! the server's shell v2 and direct TCP has no status at all (shell v1). The marker holds
//! a per-call random nonce, so output of the command itself cannot fake a status.

use rand::Rng;

use super::port::DeviceError;

/// Quote one word for a POSIX shell: safe words pass as they are, everything else goes
/// in single quotes, where nothing is special except `'` itself (written `'\''`).
pub fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'_' | b'@' | b'%' | b'+' | b'=' | b':' | b',' | b'.' | b'/' | b'-'
                )
        });
    if safe {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// One command line from an argv, every word quoted. A NUL byte cannot be carried by a
/// shell argument (C strings end there), so it is refused rather than truncated.
pub fn command_line(argv: &[&str]) -> Result<String, DeviceError> {
    if argv.is_empty() {
        return Err(DeviceError::InvalidArgument("empty command".into()));
    }
    if argv.iter().any(|w| w.contains('\0')) {
        return Err(DeviceError::InvalidArgument(
            "an argument contains a NUL byte".into(),
        ));
    }
    Ok(argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
}

/// A fresh marker (`__CMRC_<16 hex>=`), unguessable by the command's own output.
pub fn new_marker() -> String {
    let nonce: u64 = rand::thread_rng().gen();
    format!("__CMRC_{nonce:016x}=")
}

/// `line` followed by the status echo. `$?` after `;` is the status of `line`.
pub fn with_status(line: &str, marker: &str) -> String {
    format!("{line}; echo {marker}$?")
}

/// Output with the status cut out.
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    pub stdout: Vec<u8>,
    pub exit_code: i32,
    /// Bytes after the marker line: over shell v1 some devices (and the simulated
    /// phone) flush stderr after stdout, so it lands behind the status.
    pub trailing: Vec<u8>,
}

/// Find the last `<marker><digits>\n` in `stdout`; `None` when it is missing (the
/// stream was cut before the shell got there, or the line never ran).
pub fn split_status(stdout: &[u8], marker: &str) -> Option<Split> {
    let m = marker.as_bytes();
    let at = stdout.windows(m.len()).rposition(|w| w == m)?;
    let rest = &stdout[at + m.len()..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let code: i32 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let mut after = &rest[digits..];
    // echo ends the marker line with "\n" (a pty would make it "\r\n").
    if let Some(a) = after.strip_prefix(b"\r\n") {
        after = a;
    } else if let Some(a) = after.strip_prefix(b"\n") {
        after = a;
    }
    Some(Split {
        stdout: stdout[..at].to_vec(),
        exit_code: code,
        trailing: after.to_vec(),
    })
}

/// The marker that ends section `i` of a batch ([`batch_line`]): the call's marker with
/// the section number in it (`__CMRC_<nonce>_2=`).
pub fn section_marker(marker: &str, i: usize) -> String {
    format!("{}_{i}=", marker.trim_end_matches('='))
}

/// Several commands in one command line (one round trip), each quoted word by word and
/// followed by its own status echo: `a b; echo M_0=$?; c d; echo M_1=$?`. Nothing of a
/// command's words is interpreted by the phone's shell; only the `;` joins are ours.
pub fn batch_line(cmds: &[&[&str]], marker: &str) -> Result<String, DeviceError> {
    if cmds.is_empty() {
        return Err(DeviceError::InvalidArgument("empty command batch".into()));
    }
    let mut parts = Vec::with_capacity(cmds.len());
    for (i, argv) in cmds.iter().enumerate() {
        let line = command_line(argv)?;
        parts.push(format!("{line}; echo {}$?", section_marker(marker, i)));
    }
    Ok(parts.join("; "))
}

/// Cuts a batch's output back into `n` sections: each one's output and exit status.
/// `None` when a section marker is missing (the stream was cut).
pub fn split_batch(stdout: &[u8], marker: &str, n: usize) -> Option<Vec<(Vec<u8>, i32)>> {
    let mut rest = stdout.to_vec();
    let mut out = Vec::with_capacity(n);
    for i in (0..n).rev() {
        let s = split_status(&rest, &section_marker(marker, i))?;
        // What followed the last marker belongs to nobody (a late stderr flush): dropped.
        out.push((s.stdout.clone(), s.exit_code));
        rest = s.stdout;
        if i > 0 {
            // The section's own output starts after the previous marker line.
            let prev = section_marker(marker, i - 1);
            let m = prev.as_bytes();
            if let Some(at) = rest.windows(m.len()).rposition(|w| w == m) {
                let line_end = rest[at..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map(|p| at + p + 1)
                    .unwrap_or(rest.len());
                let own = rest[line_end..].to_vec();
                if let Some(last) = out.last_mut() {
                    last.0 = own;
                }
            }
        }
    }
    out.reverse();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_words_stay_bare() {
        for w in [
            "am",
            "-a",
            "android.intent.action.VIEW",
            "540",
            "/dev/tty",
            "a=b,c:d@e%f+g",
        ] {
            assert_eq!(quote(w), w);
        }
    }

    #[test]
    fn everything_else_is_single_quoted() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("a;b"), "'a;b'");
        assert_eq!(quote("$(id)`id`"), "'$(id)`id`'");
        assert_eq!(quote("x\ny"), "'x\ny'");
        assert_eq!(quote("中文"), "'中文'");
        assert_eq!(quote("'"), "''\\'''");
    }

    #[test]
    fn command_lines_quote_every_word_and_refuse_nul() {
        assert_eq!(
            command_line(&["am", "start", "-d", "https://x/?a=1&b=2"]).ok(),
            Some("am start -d 'https://x/?a=1&b=2'".to_string())
        );
        assert!(matches!(
            command_line(&["echo", "a\0b"]),
            Err(DeviceError::InvalidArgument(_))
        ));
        assert!(command_line(&[]).is_err());
    }

    #[test]
    fn quoted_words_survive_a_posix_word_splitter() {
        // shell-words implements POSIX quoting; the phone's sh follows the same rules.
        let words = [
            "plain",
            "with space",
            "semi;colon",
            "$(id)",
            "`id`",
            "'single'",
            "\"double\"",
            "new\nline",
            "back\\slash",
            "",
            "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1&x='; rm -rf / #",
        ];
        let line = command_line(&words).expect("line");
        let back = shell_words_split(&line);
        assert_eq!(
            back,
            words.iter().map(|s| s.to_string()).collect::<Vec<_>>()
        );
    }

    /// A minimal POSIX splitter for the test (quotes and backslashes only).
    fn shell_words_split(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut in_word = false;
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            match c {
                ' ' => {
                    if in_word {
                        out.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                '\'' => {
                    in_word = true;
                    for x in it.by_ref() {
                        if x == '\'' {
                            break;
                        }
                        cur.push(x);
                    }
                }
                '\\' => {
                    in_word = true;
                    if let Some(x) = it.next() {
                        cur.push(x);
                    }
                }
                _ => {
                    in_word = true;
                    cur.push(c);
                }
            }
        }
        if in_word {
            out.push(cur);
        }
        out
    }

    #[test]
    fn status_marker_is_cut_out_exactly() {
        let m = "__CMRC_00000000000000ff=";
        assert_eq!(
            with_status("false", m),
            "false; echo __CMRC_00000000000000ff=$?"
        );
        let s = split_status(b"hello\n__CMRC_00000000000000ff=0\n", m).expect("split");
        assert_eq!((s.stdout.as_slice(), s.exit_code), (&b"hello\n"[..], 0));
        // No newline at the end of the command's output: nothing is lost or added.
        let s = split_status(b"abc__CMRC_00000000000000ff=1\n", m).expect("split");
        assert_eq!((s.stdout.as_slice(), s.exit_code), (&b"abc"[..], 1));
        // Stderr flushed after the status (shell v1).
        let s =
            split_status(b"__CMRC_00000000000000ff=127\r\nsh: x: not found\n", m).expect("split");
        assert_eq!(s.exit_code, 127);
        assert_eq!(s.trailing, b"sh: x: not found\n");
        // Binary output with the marker text inside it: the last one counts.
        let mut png = b"\x89PNG__CMRC_00000000000000ff=9\n".to_vec();
        png.extend_from_slice(b"__CMRC_00000000000000ff=0\n");
        let s = split_status(&png, m).expect("split");
        assert_eq!(s.exit_code, 0);
        assert!(s.stdout.ends_with(b"=9\n"));
    }

    #[test]
    fn missing_or_garbled_marker_is_none() {
        let m = "__CMRC_00000000000000ff=";
        assert_eq!(split_status(b"cut off", m), None);
        assert_eq!(split_status(b"__CMRC_00000000000000ff=\n", m), None);
        assert_eq!(split_status(b"__CMRC_00000000000000fe=0\n", m), None);
        assert_eq!(split_status(b"__CMRC_00000000000000ff=1234\n", m), None);
    }

    #[test]
    fn a_batch_is_one_line_and_splits_back_per_command() {
        let m = "__CMRC_00000000000000ff=";
        let line = batch_line(
            &[&["pm", "list", "packages", "x"], &["dumpsys", "power"]],
            m,
        )
        .expect("line");
        assert_eq!(
            line,
            "pm list packages x; echo __CMRC_00000000000000ff_0=$?; dumpsys power; echo __CMRC_00000000000000ff_1=$?"
        );
        let out = b"package:x\n__CMRC_00000000000000ff_0=0\n  mWakefulness=Awake\n__CMRC_00000000000000ff_1=0\n";
        let parts = split_batch(out, m, 2).expect("split");
        assert_eq!(parts[0], (b"package:x\n".to_vec(), 0));
        assert_eq!(parts[1], (b"  mWakefulness=Awake\n".to_vec(), 0));
        // A failing middle command keeps its status; an empty output stays empty.
        let out = b"__CMRC_00000000000000ff_0=1\nok\n__CMRC_00000000000000ff_1=0\n";
        let parts = split_batch(out, m, 2).expect("split");
        assert_eq!(parts[0], (Vec::new(), 1));
        assert_eq!(parts[1], (b"ok\n".to_vec(), 0));
        // Cut short: no answer rather than a wrong one.
        assert_eq!(
            split_batch(b"package:x\n__CMRC_00000000000000ff_0=0\n", m, 2),
            None
        );
        // Words are still quoted one by one.
        let line = batch_line(&[&["echo", "a;b"]], m).expect("line");
        assert!(line.starts_with("echo 'a;b'; echo"), "{line}");
        assert!(batch_line(&[], m).is_err());
    }

    #[test]
    fn markers_differ_per_call() {
        assert_ne!(new_marker(), new_marker());
    }
}
