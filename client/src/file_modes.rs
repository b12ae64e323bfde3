//! Secrets at rest: the data directory is `0700`, and the store (with
//! its `-wal`/`-shm` files), the config file (it may hold the token) and the ADB key are
//! `0600` — on Unix. Too-open modes left by an older client (SQLite creates its file
//! `0644` under the usual umask) are tightened at start with a warning.
//!
//! Portable by construction: the mode calls are behind `cfg(unix)`; elsewhere
//! these functions only create what is missing (a Windows profile directory is private
//! to its user already) and report nothing to fix.

use std::io;
use std::path::{Path, PathBuf};

/// The mode of a private directory (owner only).
pub const DIR_MODE: u32 = 0o700;
/// The mode of a private file (owner read/write).
pub const FILE_MODE: u32 = 0o600;

/// A mode that was tightened: the path and the mode it had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    pub was: u32,
}

/// What this process created itself ([`note_created`]), so that opening a store can
/// tell a data directory it set up a moment ago (its lock file, its log folder, its ADB
/// key) from one an earlier client left (`store::db`: no new identity beside an earlier
/// client's files).
static CREATED: std::sync::Mutex<Option<std::collections::HashSet<PathBuf>>> =
    std::sync::Mutex::new(None);

/// At most this many paths are remembered: what matters is what a process makes before
/// it opens its stores, at start; a long run's artifact folders need no record.
const CREATED_MAX: usize = 4096;

/// Records that this process created `path` (a file or directory that did not exist).
pub fn note_created(path: &Path) {
    let mut c = CREATED.lock().unwrap_or_else(|p| p.into_inner());
    let set = c.get_or_insert_with(Default::default);
    if set.len() < CREATED_MAX {
        set.insert(path.to_path_buf());
    }
}

/// Whether this process created `path` ([`note_created`]; [`create_dir`] and
/// [`create_file`] note what they create).
pub fn created_here(path: &Path) -> bool {
    CREATED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|s| s.contains(path))
}

/// Creates `dir` (and its missing parents, all `0700`) when missing and tightens an
/// existing one whose group or other bits are set. `Some(_)`: an existing directory was
/// too open (the caller warns).
pub fn create_dir(dir: &Path) -> io::Result<Option<Tightened>> {
    if !dir.is_dir() {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .map(Path::to_path_buf)
            .collect();
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(DIR_MODE);
        }
        b.create(dir)?;
        for m in &missing {
            note_created(m);
        }
        // Whatever the umask.
        set_mode(dir, DIR_MODE)?;
        return Ok(None);
    }
    tighten(dir, DIR_MODE)
}

/// Creates `path` empty with mode `0600` when it does not exist (so that a file SQLite
/// opens next is private from its first byte, whatever the umask); tightens it when it
/// exists and is too open.
pub fn create_file(path: &Path) -> io::Result<Option<Tightened>> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(FILE_MODE);
    }
    match o.open(path) {
        Ok(_) => {
            note_created(path);
            Ok(None)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(path, FILE_MODE),
        Err(e) => Err(e),
    }
}

/// Tightens `path` to `mode` when it exists and grants anything to group or others.
/// A missing path is not an error (`Ok(None)`).
pub fn tighten(path: &Path, mode: u32) -> io::Result<Option<Tightened>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // Never chmod through a symlink (it may point anywhere).
        if meta.file_type().is_symlink() {
            return Ok(None);
        }
        let was = meta.permissions().mode() & 0o7777;
        if was & 0o077 == 0 {
            return Ok(None);
        }
        set_mode(path, mode)?;
        Ok(Some(Tightened {
            path: path.to_path_buf(),
            was,
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(None)
    }
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// The files of a data directory that hold secrets or personal data: the store and its
/// WAL/SHM, the default config file (it may hold the token), the ADB key.
pub fn secret_files(data_dir: &Path, store_file: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|s| data_dir.join(format!("{store_file}{s}")))
        .collect();
    v.push(data_dir.join("config.toml"));
    v.push(data_dir.join("adbkey"));
    v
}

/// Makes `data_dir` private and tightens every [`secret_files`] entry that exists; every
/// change is logged as a warning (an earlier client, or a copy, left it readable).
/// Errors are logged, never fatal: a file this user does not own cannot be chmodded, and
/// refusing to start would not make it private either.
pub fn secure_data_dir(data_dir: &Path, store_file: &str) -> Vec<Tightened> {
    let mut out = Vec::new();
    let mut note = |r: io::Result<Option<Tightened>>, path: &Path| match r {
        Ok(Some(t)) => {
            tracing::warn!(path = %t.path.display(), was = format!("{:o}", t.was), "too-open permissions tightened (secrets at rest)");
            out.push(t);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot tighten permissions")
        }
    };
    note(create_dir(data_dir), data_dir);
    for f in secret_files(data_dir, store_file) {
        let r = tighten(&f, FILE_MODE);
        note(r, &f);
    }
    out
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/data");
        assert_eq!(create_dir(&dir.join("logs")).unwrap(), None);
        // The parents created on the way are private too (a log directory inside the
        // data directory may be created first).
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("logs")), 0o700);
        assert_eq!(create_dir(&dir).unwrap(), None);
        let f = dir.join("client.sqlite3");
        assert_eq!(create_file(&f).unwrap(), None);
        assert_eq!(mode(&f), 0o600);
    }

    #[test]
    fn too_open_modes_are_tightened_and_reported() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for name in ["client.sqlite3", "client.sqlite3-wal", "config.toml"] {
            let p = dir.join(name);
            std::fs::write(&p, b"x").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let fixed = secure_data_dir(&dir, "client.sqlite3");
        assert_eq!(fixed.len(), 4, "{fixed:?}");
        assert_eq!(fixed[0].was, 0o755);
        assert_eq!(mode(&dir), 0o700);
        for name in ["client.sqlite3", "client.sqlite3-wal", "config.toml"] {
            assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
        }
        // Already private: nothing to do, nothing reported.
        assert!(secure_data_dir(&dir, "client.sqlite3").is_empty());
    }

    #[test]
    fn symlinks_are_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("elsewhere");
        std::fs::write(&target, b"x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = root.path().join("config.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(tighten(&link, FILE_MODE).unwrap(), None);
        assert_eq!(mode(&target), 0o644);
    }
}
