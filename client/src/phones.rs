//! Several phones per host: where each phone of one data directory
//! keeps its store, artifacts and client identity.
//!
//! One phone, one store: two phones never share a client id, a task, an order mark or an
//! artifact folder (each PDD account's tasks and orders stay on its phone). The layout:
//!
//! - one phone in a run: the data directory's own store (`<data dir>/client.sqlite3`,
//!   `<data dir>/artifacts/`), as before several phones existed — unless that phone
//!   already has a folder of its own (below), which it keeps;
//! - several phones: a phone that has a folder keeps it; the phone saved as the root
//!   store's device keeps the root store (its identity does not change); when the root
//!   store has no saved device yet (a fresh data directory), the first phone without a
//!   folder takes the root store; every other phone gets
//!   `<data dir>/phones/<key>/` (`client.sqlite3`, `artifacts/`, `backups/`).
//!
//! The key ([`phone_key`]) is the serial as one portable path component: ASCII letters,
//! digits, `-`, `_` and `.` are kept, anything else becomes `_`, and when anything was
//! replaced (or the serial is longer than 80 characters) `-` and 8 hex digits of the
//! serial's SHA-256 follow, so two serials never share a folder
//! (`127.0.0.1:5555` → `127.0.0.1_5555-<hash>`; [`crate::artifacts::safe_component`]).
//!
//! A phone's folder is found again by its serial exactly as given: the same phone given
//! as `HOST:PORT` once and `tcp:HOST:PORT` another time is two folders (the per-phone
//! process lock still keeps two workers off one phone).

use std::path::{Path, PathBuf};

/// The folder of the per-phone folders in a data directory.
pub const PHONES_DIR: &str = "phones";

/// The filesystem-safe key of a serial (see the module documentation).
pub fn phone_key(serial: &str) -> String {
    crate::artifacts::safe_component(serial)
}

/// `<data dir>/phones/<key>/`: the folder a phone gets when it does not use the root store.
pub fn phone_dir(data_dir: &Path, serial: &str) -> PathBuf {
    data_dir.join(PHONES_DIR).join(phone_key(serial))
}

/// Where one phone of a run lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhoneHome {
    /// As given (`--device`, `devices`).
    pub serial: String,
    /// The folder of its store and artifacts: the data directory itself, or
    /// [`phone_dir`].
    pub dir: PathBuf,
    /// Whether this is the data directory's own (root) store.
    pub root: bool,
}

/// The layout rule (see the module documentation), pure: `serials` in the order given
/// (duplicates dropped), `root_device` the device saved in the root store (`None`: no
/// root store, or none saved), `has_folder(serial)` whether [`phone_dir`] already holds a
/// store.
pub fn homes(
    data_dir: &Path,
    serials: &[String],
    root_device: Option<&str>,
    has_folder: impl Fn(&str) -> bool,
) -> Vec<PhoneHome> {
    let mut unique: Vec<&String> = Vec::new();
    for s in serials {
        if !unique.contains(&s) {
            unique.push(s);
        }
    }
    let single = unique.len() == 1;
    // First pass: a folder that exists, then the root store's own device.
    let mut placed: Vec<Option<bool>> = unique
        .iter()
        .map(|s| {
            if has_folder(s) {
                Some(false)
            } else if root_device == Some(s.as_str()) || single {
                Some(true)
            } else {
                None
            }
        })
        .collect();
    // A root store with no phone of its own yet goes to the first phone without a folder.
    let root_taken = placed.contains(&Some(true));
    if !root_taken && root_device.is_none() {
        if let Some(p) = placed.iter_mut().find(|p| p.is_none()) {
            *p = Some(true);
        }
    }
    unique
        .into_iter()
        .zip(placed)
        .map(|(s, root)| {
            let root = root.unwrap_or(false);
            PhoneHome {
                serial: s.clone(),
                dir: if root {
                    data_dir.to_path_buf()
                } else {
                    phone_dir(data_dir, s)
                },
                root,
            }
        })
        .collect()
}

/// [`homes`] against the disk: a folder counts when its store file exists.
pub fn homes_on_disk(
    data_dir: &Path,
    serials: &[String],
    root_device: Option<&str>,
) -> Vec<PhoneHome> {
    homes(data_dir, serials, root_device, |s| {
        crate::store::Store::path_in(&phone_dir(data_dir, s)).is_file()
    })
}

/// The per-phone folders of a data directory that hold a store (sorted by folder name),
/// for the commands that read stores (`status`, `ack`, `outbox`).
pub fn folders(data_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(data_dir.join(PHONES_DIR)) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::store::Store::path_in(p).is_file())
        .collect();
    v.sort();
    v
}

/// The name a phone registers with when several phones run: the configured name and the
/// serial (`店铺A · 127.0.0.1:5555`). Refused over the §4.1 limit of 50 characters with
/// a message that says so.
pub fn phone_name(name: &str, serial: &str) -> Result<String, String> {
    let n = format!("{name} · {serial}");
    let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
    if n.chars().count() > max {
        return Err(format!(
            "the client name of phone {serial} would be {n:?}, longer than {max} characters (several phones register as `NAME · SERIAL`): choose a shorter name"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_key_is_one_portable_component_and_keeps_serials_apart() {
        assert_eq!(phone_key("R58M123ABC"), "R58M123ABC");
        let a = phone_key("127.0.0.1:5555");
        assert!(a.starts_with("127.0.0.1_5555-"), "{a}");
        assert_eq!(a.len(), "127.0.0.1_5555-".len() + 8);
        // What sanitising makes alike stays apart.
        assert_ne!(phone_key("127.0.0.1_5555"), a);
        assert_ne!(phone_key("tcp:127.0.0.1:5555"), a);
        for k in [a, phone_key("../x"), phone_key("a/b\\c"), phone_key("CON")] {
            assert!(
                !k.contains(['/', '\\', ':']) && k != "." && k != "..",
                "{k}"
            );
        }
    }

    #[test]
    fn one_phone_keeps_the_root_store() {
        let d = Path::new("/d");
        for saved in [None, Some("A"), Some("OTHER")] {
            let h = homes(d, &s(&["A"]), saved, |_| false);
            assert_eq!(h.len(), 1);
            assert!(h[0].root, "{saved:?}");
            assert_eq!(h[0].dir, d);
        }
        // … unless it has a folder of its own from an earlier run with several phones.
        let h = homes(d, &s(&["B"]), Some("A"), |x| x == "B");
        assert!(!h[0].root);
        assert_eq!(h[0].dir, phone_dir(d, "B"));
    }

    #[test]
    fn the_root_stores_phone_keeps_it_and_the_others_get_folders() {
        let d = Path::new("/d");
        let h = homes(d, &s(&["B", "A", "C"]), Some("A"), |_| false);
        assert_eq!(
            h.iter()
                .map(|h| (h.serial.as_str(), h.root))
                .collect::<Vec<_>>(),
            [("B", false), ("A", true), ("C", false)]
        );
        assert_eq!(h[0].dir, d.join("phones").join("B"));
        assert_eq!(h[2].dir, d.join("phones").join("C"));
    }

    #[test]
    fn a_fresh_root_store_goes_to_the_first_phone_without_a_folder() {
        let d = Path::new("/d");
        let h = homes(d, &s(&["A", "B"]), None, |_| false);
        assert!(h[0].root && !h[1].root);
        let h = homes(d, &s(&["A", "B"]), None, |x| x == "A");
        assert!(!h[0].root && h[1].root, "{h:?}");
    }

    #[test]
    fn a_root_store_of_another_phone_is_left_alone() {
        let d = Path::new("/d");
        let h = homes(d, &s(&["A", "B"]), Some("Z"), |_| false);
        assert!(h.iter().all(|h| !h.root), "{h:?}");
    }

    #[test]
    fn duplicates_are_one_phone() {
        let h = homes(Path::new("/d"), &s(&["A", "B", "A"]), None, |_| false);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn the_layout_is_stable_across_runs() {
        // Run 1: A and B on a fresh directory; run 2: B alone; run 3: A alone; run 4: both.
        let d = Path::new("/d");
        let first = homes(d, &s(&["A", "B"]), None, |_| false);
        let folder = |x: &str| x == "B";
        let again = |v: &[&str]| homes(d, &s(v), Some("A"), folder);
        assert_eq!(again(&["B"])[0].dir, first[1].dir);
        assert_eq!(again(&["A"])[0].dir, first[0].dir);
        assert_eq!(again(&["A", "B"]), first);
    }

    #[test]
    fn names_carry_the_serial_and_respect_the_limit() {
        assert_eq!(
            phone_name("店铺A", "127.0.0.1:5555").unwrap(),
            "店铺A · 127.0.0.1:5555"
        );
        let long = "x".repeat(45);
        let e = phone_name(&long, "R58M123ABC").unwrap_err();
        assert!(e.contains("50"), "{e}");
    }
}
