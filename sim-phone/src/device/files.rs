//! The phone's tiny in-memory file system (`/sdcard` = `/storage/emulated/0`).

use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
struct File {
    data: Arc<Vec<u8>>,
    mtime: u32,
}

/// Files by normalized path; directories exist implicitly (every prefix of a file) plus
/// the usual Android ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Files {
    files: BTreeMap<String, File>,
}

impl Files {
    pub(crate) fn read(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        self.files.get(&normalize(path)).map(|f| f.data.clone())
    }

    pub(crate) fn write(&mut self, path: &str, data: Vec<u8>, mtime: u32) {
        self.files.insert(
            normalize(path),
            File {
                data: Arc::new(data),
                mtime,
            },
        );
    }

    /// Remove a file, or every file below a directory. False when nothing was there.
    pub(crate) fn remove(&mut self, path: &str) -> bool {
        let p = normalize(path);
        if self.files.remove(&p).is_some() {
            return true;
        }
        let prefix = format!("{p}/");
        let before = self.files.len();
        self.files.retain(|k, _| !k.starts_with(&prefix));
        before != self.files.len()
    }

    /// (mode, size, mtime) of a path.
    pub(crate) fn stat(&self, path: &str) -> Option<(u32, u64, u32)> {
        let p = normalize(path);
        if let Some(f) = self.files.get(&p) {
            return Some((0o100_660, f.data.len() as u64, f.mtime));
        }
        if self.is_dir(&p) {
            return Some((0o040_771, 4096, 0));
        }
        None
    }

    fn is_dir(&self, p: &str) -> bool {
        const DIRS: &[&str] = &[
            "/",
            "/sdcard",
            "/data",
            "/data/local",
            "/data/local/tmp",
            "/storage",
            "/storage/emulated",
            "/storage/emulated/0",
        ];
        if DIRS.contains(&p) {
            return true;
        }
        let prefix = format!("{}/", p.trim_end_matches('/'));
        self.files.keys().any(|k| k.starts_with(&prefix))
    }

    /// Entries of a directory: (name, mode, size, mtime).
    pub(crate) fn list_dir(&self, path: &str) -> Vec<(String, u32, u64, u32)> {
        let p = normalize(path);
        let prefix = if p == "/" {
            "/".to_string()
        } else {
            format!("{p}/")
        };
        let mut out: BTreeMap<String, (u32, u64, u32)> = BTreeMap::new();
        for (k, f) in &self.files {
            if let Some(rest) = k.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((d, _)) => {
                        out.entry(d.to_string()).or_insert((0o040_771, 4096, 0));
                    }
                    None => {
                        out.insert(rest.to_string(), (0o100_660, f.data.len() as u64, f.mtime));
                    }
                }
            }
        }
        out.into_iter().map(|(n, (m, s, t))| (n, m, s, t)).collect()
    }
}

/// Collapse `//`, `.` and a trailing slash; `/storage/emulated/0` and `/sdcard` are the
/// same place on Android.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    let mut s = format!("/{}", parts.join("/"));
    if let Some(rest) = s.strip_prefix("/storage/emulated/0") {
        if rest.is_empty() || rest.starts_with('/') {
            s = format!("/sdcard{rest}");
        }
    }
    s
}
