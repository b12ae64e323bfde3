//! Rotated log files: `run` writes its log lines to
//! `<log_dir>/cmautobuy-client.log` as well as to stderr, without ANSI colours. When the
//! next line would take the file over `max_bytes`, it rotates by size:
//! `cmautobuy-client.log` → `.log.1` → `.log.2` … and the oldest beyond `files` is
//! deleted — at most `files × max_bytes` on disk (10 MB × 5 by default).
//! (`tracing-appender` rotates by time only, so this is our own small writer.)
//!
//! Lines never carry the token (it lives in a [`crate::secret::Secret`], which prints
//! `***`). Files are created `0600` in a `0700` directory on Unix ([`crate::file_modes`]).
//! A write error is swallowed after one note on stderr: logging never stops the client.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The current log file's name; rotations append `.1`, `.2`, …
pub const LOG_FILE: &str = "cmautobuy-client.log";

/// A size-rotating log file.
#[derive(Debug)]
pub struct RotatingFile {
    dir: PathBuf,
    max_bytes: u64,
    files: u32,
    file: Option<File>,
    size: u64,
    /// Whether a failure has already been reported on stderr.
    reported: bool,
}

impl RotatingFile {
    /// Opens (creating) `dir/cmautobuy-client.log` for appending. `files` ≥ 1 counts the
    /// current file.
    pub fn open(dir: &Path, max_bytes: u64, files: u32) -> io::Result<RotatingFile> {
        crate::file_modes::create_dir(dir)?;
        let mut f = RotatingFile {
            dir: dir.to_path_buf(),
            max_bytes: max_bytes.max(1),
            files: files.max(1),
            file: None,
            size: 0,
            reported: false,
        };
        f.reopen()?;
        Ok(f)
    }

    /// The current file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(LOG_FILE)
    }

    fn rotated(&self, n: u32) -> PathBuf {
        self.dir.join(format!("{LOG_FILE}.{n}"))
    }

    fn reopen(&mut self) -> io::Result<()> {
        let path = self.path();
        crate::file_modes::create_file(&path)?;
        let file = std::fs::OpenOptions::new().append(true).open(&path)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// `.log` → `.log.1` → … ; the file past `files` is removed.
    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        let keep = self.files - 1;
        if keep == 0 {
            let _ = std::fs::remove_file(self.path());
        } else {
            let _ = std::fs::remove_file(self.rotated(keep));
            for n in (1..keep).rev() {
                let from = self.rotated(n);
                if from.exists() {
                    std::fs::rename(&from, self.rotated(n + 1))?;
                }
            }
            std::fs::rename(self.path(), self.rotated(1))?;
        }
        self.reopen()
    }

    fn write_line(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.size > 0 && self.size.saturating_add(buf.len() as u64) > self.max_bytes {
            self.rotate()?;
        }
        if self.file.is_none() {
            self.reopen()?;
        }
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        f.write_all(buf)?;
        self.size = self.size.saturating_add(buf.len() as u64);
        Ok(())
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Err(e) = self.write_line(buf) {
            // Logging must not fail the client (a full disk is logged on stderr once).
            self.file = None;
            if !self.reported {
                self.reported = true;
                eprintln!(
                    "cmautobuy-client: cannot write the log file in {}: {e}",
                    self.dir.display()
                );
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// A [`tracing_subscriber::fmt::MakeWriter`] over one shared [`RotatingFile`]: each
/// event is formatted into one buffer and written in one call, so a line never straddles
/// a rotation.
#[derive(Clone, Debug)]
pub struct LogFiles(Arc<Mutex<RotatingFile>>);

impl LogFiles {
    pub fn new(file: RotatingFile) -> Self {
        LogFiles(Arc::new(Mutex::new(file)))
    }
}

/// One event's writer: holds the lock while the line is written.
pub struct LogLine<'a>(std::sync::MutexGuard<'a, RotatingFile>);

impl Write for LogLine<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFiles {
    type Writer = LogLine<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        LogLine(self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn rotates_by_size_and_keeps_at_most_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        let mut f = RotatingFile::open(&logs, 100, 3).unwrap();
        let line = [b'x'; 39];
        let mut line = line.to_vec();
        line.push(b'\n'); // 40 bytes: two lines per file
        for i in 0..20u8 {
            line[0] = b'a' + i;
            f.write_all(&line).unwrap();
        }
        let got = files(&logs);
        assert_eq!(
            got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            [LOG_FILE, "cmautobuy-client.log.1", "cmautobuy-client.log.2"]
        );
        assert!(got.iter().all(|(_, len)| *len <= 100), "{got:?}");
        // The newest lines are in the current file, whole.
        let current = std::fs::read_to_string(logs.join(LOG_FILE)).unwrap();
        assert_eq!(current.lines().count(), 2);
        assert!(current.starts_with('s') && current.lines().nth(1).unwrap().starts_with('t'));
        let older = std::fs::read_to_string(logs.join("cmautobuy-client.log.1")).unwrap();
        assert!(older.starts_with('q'), "{older}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(logs.join(LOG_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn reopening_appends_and_a_single_file_just_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RotatingFile::open(dir.path(), 50, 1).unwrap();
        f.write_all(b"0123456789012345678901234567890123456789\n")
            .unwrap();
        drop(f);
        let mut f = RotatingFile::open(dir.path(), 50, 1).unwrap();
        assert_eq!(f.size, 41);
        f.write_all(b"next line that does not fit\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap(),
            "next line that does not fit\n"
        );
        assert_eq!(files(dir.path()).len(), 1);
    }
}
