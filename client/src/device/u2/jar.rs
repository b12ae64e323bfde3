//! Where the `u2.jar` comes from: config `u2_jar` (env `CMAUTOBUY_U2_JAR`), else a
//! `u2.jar` beside the binary, else the `assets/u2.jar` of an installed `uiautomator2`
//! Python package (asked of `python3` under a short deadline). Its sha256 decides
//! whether the phone's copy must be pushed again.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::error::U2Error;

/// Where the jar goes on the phone (uiautomator2's own path).
pub const PHONE_JAR: &str = "/data/local/tmp/u2.jar";

/// How long `python3` may take to name its `uiautomator2` package.
const PYTHON_DEADLINE: Duration = Duration::from_secs(5);

/// The jar to use: `configured` when given (it must be a file), else beside `exe`, else
/// the Python package's. [`U2Error::JarNotFound`] names every place looked at.
pub fn find(configured: Option<&Path>, exe: Option<&Path>) -> Result<PathBuf, U2Error> {
    if let Some(p) = configured {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(U2Error::JarNotFound(format!(
                "u2_jar {}: not a file",
                p.display()
            )))
        };
    }
    let mut looked = Vec::new();
    if let Some(dir) = exe.and_then(Path::parent) {
        let p = dir.join("u2.jar");
        if p.is_file() {
            return Ok(p);
        }
        looked.push(p.display().to_string());
    }
    match python_package_dir() {
        Some(dir) => {
            let p = dir.join("assets").join("u2.jar");
            if p.is_file() {
                return Ok(p);
            }
            looked.push(p.display().to_string());
        }
        None => looked.push("python3's uiautomator2 package (not installed)".into()),
    }
    Err(U2Error::JarNotFound(format!(
        "no u2.jar (set u2_jar or CMAUTOBUY_U2_JAR); looked at {}",
        looked.join(", ")
    )))
}

/// The directory of `python3`'s `uiautomator2` package, asked with a deadline (a
/// python that hangs is killed).
fn python_package_dir() -> Option<PathBuf> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u, os; s = u.find_spec('uiautomator2'); \
             print(os.path.dirname(s.origin) if s and s.origin else '')",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let end = Instant::now() + PYTHON_DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) => return None,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    use std::io::Read;
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    let dir = out.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// The jar's bytes and their sha256 (lower-case hex).
pub fn read(path: &Path) -> Result<(Vec<u8>, String), U2Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| U2Error::JarNotFound(format!("{}: {e}", path.display())))?;
    let hex = sha256_hex(&bytes);
    Ok((bytes, hex))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hash `sha256sum PATH` printed (`HASH  PATH`), if it printed one.
pub fn parse_sha256sum(stdout: &str) -> Option<String> {
    let word = stdout.split_whitespace().next()?;
    (word.len() == 64 && word.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| word.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_jar_must_exist_and_wins() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("u2.jar");
        std::fs::write(&jar, b"jar").unwrap();
        assert_eq!(find(Some(&jar), None).unwrap(), jar);
        let e = find(Some(&dir.path().join("nope.jar")), None).unwrap_err();
        assert_eq!(e.code(), "U2_JAR_NOT_FOUND");
    }

    #[test]
    fn a_jar_beside_the_binary_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u2.jar"), b"jar").unwrap();
        let exe = dir.path().join("cmautobuy-client");
        assert_eq!(find(None, Some(&exe)).unwrap(), dir.path().join("u2.jar"));
    }

    #[test]
    fn sha256sum_output_is_read() {
        let h = sha256_hex(b"abc");
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            parse_sha256sum(&format!("{}  /data/local/tmp/u2.jar\n", h.to_uppercase())),
            Some(h)
        );
        assert_eq!(
            parse_sha256sum("sha256sum: /data/local/tmp/u2.jar: No such file or directory\n"),
            None
        );
    }
}
