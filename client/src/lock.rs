//! One process per data directory and per phone.
//!
//! Two `run` processes on one data directory would both "recover" the same runs; two on
//! one phone would tap the same screen. Each is prevented by an **OS advisory exclusive
//! lock** (`flock(2)`, non-blocking) on a lock file, held for the life of the process:
//!
//! - the data directory: `<data dir>/client.lock` ([`lock_data_dir`]);
//! - the phone: `<lock dir>/device-<key>-<hash>.lock` ([`lock_device`]), in a lock
//!   directory shared by every client on the machine — `lock_dir` in the config file,
//!   `CMAUTOBUY_LOCK_DIR`, `run --lock-dir`; default [`default_lock_dir`]
//!   (`/tmp/cmautobuy-locks` on Unix). The key is the phone's *resolved network address*
//!   for `tcp:HOST:PORT` and `HOST:PORT` serials (both reach the same adbd, so they share
//!   one lock), else the adb serial ([`device_key`]). A phone reached once over USB and
//!   once over the network has two keys: the lock cannot know they are one phone.
//!
//! The lock dies with the process (the kernel drops it when the descriptor closes, also
//! on SIGKILL), so a stale lock file never blocks. The holder writes its pid and what it
//! is into the file, only so that a refused process can name it ([`LockError::Held`]);
//! the file is never removed (removing a lock file races with a process opening it).
//! While it holds a device lock, a process also holds a *shared* lock on the lock
//! directory: `systemd-tmpfiles` skips locked directories, so a long run's lock file is
//! not aged out of `/tmp` under it.
//!
//! Who locks what (the CLI decides): `run` takes the data-directory lock first (before it
//! opens the store) and then, when a phone is configured, the phone's lock (before it
//! touches the phone); `rehearse` takes the data-directory lock when given `--data-dir`
//! and the phone's lock with `--device`. The operator commands (`status`, `inspect`,
//! `doctor`, `register`, `ack`, `outbox`, …) take none: they read, or write single rows
//! that SQLite serialises, and are meant to be used while `run` runs (`ack` resumes a
//! running client's claiming); `doctor` only reads the phone.
//!
//! The locks are `std`'s (`File::try_lock`: `flock(2)` on Unix, `LockFileEx` on Windows),
//! so Windows hosts get the same guarantee. The lock *directory*'s shared lock (for
//! `systemd-tmpfiles`) is taken where a directory can be opened as a file (Unix); a
//! phone lock does not depend on it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::device::DeviceAddress;

/// The data-directory lock file's name.
pub const DATA_DIR_LOCK_FILE: &str = "client.lock";

/// The default shared lock directory: `/tmp/cmautobuy-locks` on Unix (one fixed path,
/// whatever `TMPDIR` or the user: every client of the machine must find the same
/// files), the system temporary directory elsewhere.
pub fn default_lock_dir() -> PathBuf {
    if cfg!(unix) {
        PathBuf::from("/tmp/cmautobuy-locks")
    } else {
        std::env::temp_dir().join("cmautobuy-locks")
    }
}

/// Who holds a lock, as its lock file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// What the holder said it is (`cmautobuy-client run, data directory …`).
    pub what: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error("{what} is in use by {}; lock file {}", holder_text(.holder), .path.display())]
    Held {
        /// `the data directory /x`, `the device SERIAL`.
        what: String,
        /// `None` when the holder's pid could not be read (it has not written it yet, or
        /// the file cannot be read).
        holder: Option<Holder>,
        path: PathBuf,
    },
    /// The lock file cannot be created, opened or locked.
    #[error("cannot lock {what} ({}): {source}", .path.display())]
    Io {
        what: String,
        path: PathBuf,
        source: io::Error,
    },
}

fn holder_text(h: &Option<Holder>) -> String {
    match h {
        Some(h) if h.what.is_empty() => format!("pid {}", h.pid),
        Some(h) => format!("pid {} ({})", h.pid, h.what),
        None => "another process (its pid is not in the lock file)".to_string(),
    }
}

/// A held lock: released when dropped (or when the process ends, however it ends).
#[must_use = "the lock is released when dropped"]
#[derive(Debug)]
pub struct ProcessLock {
    file: File,
    path: PathBuf,
    writable: bool,
    /// The shared lock on the lock directory (device locks only).
    _dir: Option<File>,
}

impl ProcessLock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ProcessLock {
    fn drop(&mut self) {
        // Still locked: nobody reads a half-cleared file. The pid goes, the file stays.
        if self.writable {
            let _ = self.file.set_len(0);
        }
    }
}

/// Locks the data directory (created if missing) for this process: `holder` says what
/// this process is (`cmautobuy-client run`).
pub fn lock_data_dir(data_dir: &Path, holder: &str) -> Result<ProcessLock, LockError> {
    let what = format!("the data directory {}", data_dir.display());
    let path = data_dir.join(DATA_DIR_LOCK_FILE);
    // Created private (`0700`, secrets at rest): the store lands here next.
    let tightened = crate::file_modes::create_dir(data_dir).map_err(|source| LockError::Io {
        what: what.clone(),
        path: path.clone(),
        source,
    })?;
    if let Some(t) = tightened {
        tracing::warn!(path = %t.path.display(), was = format!("{:o}", t.was), "too-open permissions tightened (secrets at rest)");
    }
    let existed = path.exists();
    let lock = acquire(&path, what, holder, None, false)?;
    if !existed {
        // This process's own lock file is no sign of an earlier client (`store::db`).
        crate::file_modes::note_created(&path);
    }
    Ok(lock)
}

/// Locks the phone `serial` (as the user gave it; `addr` is what it resolved to) in the
/// shared `lock_dir` (created if missing: world-writable with the sticky bit, like
/// `/tmp`, so that every user's client can lock there).
pub fn lock_device(
    lock_dir: &Path,
    serial: &str,
    addr: &DeviceAddress,
    holder: &str,
) -> Result<ProcessLock, LockError> {
    let what = format!("the device {serial}");
    let path = device_lock_path(lock_dir, &device_key(addr));
    let io = |source| LockError::Io {
        what: what.clone(),
        path: path.clone(),
        source,
    };
    create_shared_dir(lock_dir).map_err(io)?;
    let dir = File::open(lock_dir).ok().filter(|d| {
        // Never blocks: only a cleaner holds the directory exclusively, and briefly.
        try_lock(d, false).unwrap_or(false)
    });
    acquire(&path, what, holder, dir, true)
}

/// The key of a phone: `net-HOST:PORT` (resolved) for network serials, else
/// `serial-SERIAL`.
pub fn device_key(addr: &DeviceAddress) -> String {
    match addr {
        DeviceAddress::Tcp(a) => format!("net-{a}"),
        DeviceAddress::Server {
            connect: Some(a), ..
        } => format!("net-{a}"),
        DeviceAddress::Server { serial, .. } => format!("serial-{serial}"),
    }
}

/// The lock file of a phone's key in `lock_dir`: the key made a safe file name (ASCII
/// letters, digits, `.`, `-`; anything else `_`; at most 80 characters) plus a hash of
/// the exact key, so that two keys that read alike never share a file.
pub fn device_lock_path(lock_dir: &Path, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let hash = hex::encode(&Sha256::digest(key.as_bytes())[..8]);
    lock_dir.join(format!("device-{safe}-{hash}.lock"))
}

/// The holder a lock file names, if it names one.
pub fn read_holder(path: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(path).ok()?;
    parse_holder(&text)
}

fn parse_holder(text: &str) -> Option<Holder> {
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse::<u32>().ok()?;
    let what = lines.next().unwrap_or_default().trim().to_string();
    Some(Holder { pid, what })
}

fn acquire(
    path: &Path,
    what: String,
    holder: &str,
    dir: Option<File>,
    shared: bool,
) -> Result<ProcessLock, LockError> {
    let io = |source| LockError::Io {
        what: what.clone(),
        path: path.to_path_buf(),
        source,
    };
    let (mut file, writable) = open_lock_file(path, shared).map_err(io)?;
    if !try_lock(&file, true).map_err(io)? {
        return Err(LockError::Held {
            holder: holder_of(&mut file),
            what,
            path: path.to_path_buf(),
        });
    }
    if writable {
        let text = format!("{}\n{}\n", std::process::id(), holder.replace('\n', " "));
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(text.as_bytes()))
            .map_err(io)?;
    }
    Ok(ProcessLock {
        file,
        path: path.to_path_buf(),
        writable,
        _dir: dir,
    })
}

/// The holder's pid from the locked file: it writes it right after locking, so an
/// empty file is read again for a moment (bounded) before giving up.
fn holder_of(file: &mut File) -> Option<Holder> {
    for _ in 0..50 {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok() && file.read_to_string(&mut text).is_ok() {
            if let Some(h) = parse_holder(&text) {
                return Some(h);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Opens (creating) the lock file without truncating it (its holder's pid is in it).
/// A `shared` file (the lock directory's) is made writable by everyone; one another
/// user created and that this one cannot write is locked read-only (`flock` needs no
/// write access): this process's pid is then not recorded.
fn open_lock_file(path: &Path, shared: bool) -> io::Result<(File, bool)> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    match o.open(path) {
        Ok(f) => {
            #[cfg(unix)]
            if shared {
                // Other users' clients must be able to write their pid too (fails,
                // harmlessly, on a file someone else owns).
                use std::os::unix::fs::PermissionsExt;
                let _ = f.set_permissions(std::fs::Permissions::from_mode(0o666));
            }
            #[cfg(not(unix))]
            let _ = shared;
            Ok((f, true))
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            Ok((OpenOptions::new().read(true).open(path)?, false))
        }
        Err(e) => Err(e),
    }
}

fn create_shared_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    Ok(())
}

/// A non-blocking exclusive (or shared) advisory lock: `Ok(false)` when another open
/// file description holds a conflicting one. `std`'s file locks: `flock(2)` on Unix,
/// `LockFileEx` on Windows — the same one-process guarantee on both.
fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    let r = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match r {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::net::{SocketAddr, SocketAddrV4};

    fn server() -> SocketAddrV4 {
        "127.0.0.1:5037".parse().unwrap()
    }

    #[test]
    fn a_second_lock_on_the_data_dir_is_refused_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let held = lock_data_dir(&data, "cmautobuy-client run").unwrap();
        assert_eq!(held.path(), data.join(DATA_DIR_LOCK_FILE));
        // flock conflicts between open file descriptions, in one process too.
        let err = lock_data_dir(&data, "cmautobuy-client run").unwrap_err();
        let LockError::Held { holder, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(
            holder,
            &Some(Holder {
                pid: std::process::id(),
                what: "cmautobuy-client run".into()
            })
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "the data directory {} is in use by pid {} (cmautobuy-client run)",
                data.display(),
                std::process::id()
            )),
            "{msg}"
        );
        drop(held);
        // Released: the file stays (emptied), and does not block.
        assert!(data.join(DATA_DIR_LOCK_FILE).exists());
        assert_eq!(read_holder(&data.join(DATA_DIR_LOCK_FILE)), None);
        let again = lock_data_dir(&data, "second").unwrap();
        assert_eq!(read_holder(again.path()).unwrap().what, "second");
    }

    #[test]
    fn a_stale_lock_file_with_a_dead_pid_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(DATA_DIR_LOCK_FILE), "999999\nold run\n").unwrap();
        let l = lock_data_dir(dir.path(), "new").unwrap();
        assert_eq!(read_holder(l.path()).unwrap().pid, std::process::id());
    }

    #[test]
    fn network_serials_of_one_adbd_share_a_lock_and_names_are_safe() {
        let tcp = DeviceAddress::parse("tcp:127.0.0.1:5555", server()).unwrap();
        let host_port = DeviceAddress::parse("127.0.0.1:5555", server()).unwrap();
        let usb = DeviceAddress::parse("R58M12ABCDE", server()).unwrap();
        assert_eq!(device_key(&tcp), "net-127.0.0.1:5555");
        assert_eq!(device_key(&tcp), device_key(&host_port));
        assert_eq!(device_key(&usb), "serial-R58M12ABCDE");
        let v6 = DeviceAddress::Tcp("[::1]:5555".parse::<SocketAddr>().unwrap());
        let locks = Path::new("/l");
        for key in [
            device_key(&tcp),
            device_key(&usb),
            device_key(&v6),
            "serial-../../etc/x y".to_string(),
        ] {
            let p = device_lock_path(locks, &key);
            assert_eq!(p.parent(), Some(locks), "{key}: {p:?}");
            let name = p.file_name().unwrap().to_str().unwrap();
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{name}"
            );
            assert!(name.starts_with("device-") && name.ends_with(".lock"));
        }
        // Alike after sanitising, different files.
        assert_ne!(
            device_lock_path(locks, "serial-a:b"),
            device_lock_path(locks, "serial-a_b")
        );
    }

    #[test]
    fn a_second_lock_on_the_device_is_refused_across_data_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        let a = DeviceAddress::parse("tcp:127.0.0.1:5555", server()).unwrap();
        let b = DeviceAddress::parse("127.0.0.1:5555", server()).unwrap();
        let held = lock_device(&locks, "tcp:127.0.0.1:5555", &a, "run on /a").unwrap();
        let err = lock_device(&locks, "127.0.0.1:5555", &b, "run on /b").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "the device 127.0.0.1:5555 is in use by pid {} (run on /a)",
                std::process::id()
            )),
            "{msg}"
        );
        // Another phone is free.
        let other = DeviceAddress::parse("tcp:127.0.0.1:5556", server()).unwrap();
        let _o = lock_device(&locks, "tcp:127.0.0.1:5556", &other, "x").unwrap();
        // The shared directory and its files are open to every user's client; a data
        // directory's lock file is not.
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&locks), 0o1777);
        assert_eq!(mode(held.path()), 0o666);
        let data = lock_data_dir(&dir.path().join("data"), "x").unwrap();
        assert_eq!(mode(data.path()) & 0o002, 0, "not world-writable");
        drop(held);
        let _again = lock_device(&locks, "127.0.0.1:5555", &b, "run on /b").unwrap();
    }
}
