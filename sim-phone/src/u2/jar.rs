//! The one `u2.jar` the simulated phone starts: the file uiautomator2's PyPI wheel ships
//! (`uiautomator2/assets/u2.jar`). Any other file at the class path fails as a phone
//! fails to find `com.wetest.uia2.Main` in it.

use sha2::{Digest, Sha256};

/// The PyPI release the jar is taken from (`scripts/test` installs exactly this wheel).
pub const U2_PACKAGE_VERSION: &str = "3.7.1";
/// The server's own version (`uiautomator2/assets/version.json`, key `u2.jar`).
pub const U2_JAR_VERSION: &str = "0.4.1";
/// sha256 of `uiautomator2-3.7.1-py3-none-any.whl` (what `scripts/test` checks).
pub const U2_WHEEL_SHA256: &str =
    "55ccc16f7c52d3035dbc14e1400524e76510dc353f9fc4a0bfa85bf58c51cc67";
/// sha256 of `uiautomator2/assets/u2.jar` inside that wheel.
pub const U2_JAR_SHA256: &str = "87c8ac9505970d42aa5922baa90114808fda6f47f9e5fbd4caa0f621c2c8d30d";
/// Where uiautomator2 pushes the jar (`core.py`).
pub const U2_JAR_PATH: &str = "/data/local/tmp/u2.jar";
/// The class `app_process` is told to run.
pub const U2_MAIN_CLASS: &str = "com.wetest.uia2.Main";
/// The server's port when `-p` is not given (`Main`'s help text; `core.py`'s default).
pub const U2_DEFAULT_PORT: u16 = 9008;

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Is this file the pinned jar?
pub fn is_pinned_jar(data: &[u8]) -> bool {
    sha256_hex(data) == U2_JAR_SHA256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(!is_pinned_jar(b"not a jar"));
    }
}
