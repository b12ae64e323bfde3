//! The replay log: one JSON object per line, what the client did to the replayed phone and
//! where the scenario took it (or `"off_script": true` when no transition matched).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

fn is_false(b: &bool) -> bool {
    !*b
}

/// One line of the replay log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayLogEntry {
    /// 1, 2, 3 … in the order things happened.
    pub seq: u64,
    /// `tap` | `swipe` | `back` | `key` | `open_url` | `collapse_shade` | `dump` |
    /// `screencap` | `text`.
    pub action: String,
    /// The screen the action met.
    pub screen: String,
    /// The screen after it (absent when off-script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub off_script: bool,
    /// A tap's point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<[i32; 2]>,
    /// A swipe's ends: x1, y1, x2, y2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swipe: Option<[i32; 4]>,
    /// A deep link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A key's code (`back` is 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycode: Option<i32>,
    /// The order the transition placed (its 订单编号 in the ledger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_sn: Option<String>,
}

impl ReplayLogEntry {
    pub(crate) fn new(action: &str, screen: &str) -> ReplayLogEntry {
        ReplayLogEntry {
            seq: 0,
            action: action.to_string(),
            screen: screen.to_string(),
            to: None,
            off_script: false,
            at: None,
            swipe: None,
            url: None,
            keycode: None,
            order_sn: None,
        }
    }
}

/// Read a replay log file (JSON lines).
pub fn read_replay_log(path: &Path) -> std::io::Result<Vec<ReplayLogEntry>> {
    let text = std::fs::read_to_string(path)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(std::io::Error::other))
        .collect()
}

/// The log in memory and, optionally, appended to a file line by line as it grows.
#[derive(Debug, Default)]
pub(crate) struct ReplayLog {
    entries: Vec<ReplayLogEntry>,
    file: Option<(PathBuf, std::fs::File)>,
}

impl ReplayLog {
    /// A log that also writes to `path` (truncated).
    pub fn to_file(path: &Path) -> std::io::Result<ReplayLog> {
        let f = std::fs::File::create(path)?;
        Ok(ReplayLog {
            entries: Vec::new(),
            file: Some((path.to_path_buf(), f)),
        })
    }

    pub fn push(&mut self, mut e: ReplayLogEntry) {
        e.seq = self.entries.len() as u64 + 1;
        if let Some((path, f)) = self.file.as_mut() {
            let mut line = serde_json::to_string(&e).unwrap_or_default();
            line.push('\n');
            // One write per line; a full disk loses log lines, never the replay.
            if let Err(err) = f.write_all(line.as_bytes()) {
                tracing::warn!(path = %path.display(), error = %err, "replay log write failed");
            }
        }
        self.entries.push(e);
    }

    pub fn entries(&self) -> &[ReplayLogEntry] {
        &self.entries
    }
}
