//! `run`'s progress lines: on an interactive run — stderr a terminal,
//! text logs — one line per phone on stderr: the phone, the task in hand (id, type,
//! mode), the flow's step and how long the task has run, or `idle` / `paused (CODE)`.
//!
//! Printed as whole lines between the log lines (never a partial line, never cursor
//! movement, so a log line is never overwritten or broken): whenever what a phone does
//! changes (its task or step), and every [`REPEAT`] while a task runs. Read every
//! [`EVERY`] from each phone's progress board ([`ProgressHandle`], set by the driver) and,
//! without a task in hand, its store's device pause.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::config::LogFormat;
use crate::progress::{Current, ProgressHandle};
use crate::store::Store;

/// How often the stores are read.
const EVERY: Duration = Duration::from_secs(2);
/// A running task's line is printed again this often (its elapsed time moves).
const REPEAT: Duration = Duration::from_secs(30);

/// Whether this run shows progress lines: stderr is a terminal and the logs are text.
pub fn wanted(format: LogFormat) -> bool {
    format == LogFormat::Text && std::io::stderr().is_terminal()
}

/// Prints the progress lines of `phones` (serial — `None` for a single-phone run —,
/// store and progress board) until the process ends.
pub async fn lines(phones: Vec<(Option<String>, Store, ProgressHandle)>) {
    let mut last: Vec<String> = Vec::new();
    let mut printed = Instant::now();
    loop {
        let phones2 = phones.clone();
        let now = chrono::Utc::now();
        let Ok(current) = tokio::task::spawn_blocking(move || {
            phones2
                .iter()
                .map(|(serial, store, board)| {
                    state_of(serial.as_deref(), store, board.current().as_ref(), now)
                })
                .collect::<Vec<_>>()
        })
        .await
        else {
            return;
        };
        let keys: Vec<String> = current.iter().map(|(k, _)| k.clone()).collect();
        let busy = current.iter().any(|(_, elapsed)| elapsed.is_some());
        if keys != last || (busy && printed.elapsed() >= REPEAT) {
            for (line, elapsed) in &current {
                match elapsed {
                    Some(secs) => eprintln!("{line} {}", clock(*secs)),
                    None => eprintln!("{line}"),
                }
            }
            last = keys;
            printed = Instant::now();
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// One phone's line (without the elapsed time) and the seconds its task has run
/// (`None`: no task in hand).
fn state_of(
    serial: Option<&str>,
    store: &Store,
    current: Option<&Current>,
    now: chrono::DateTime<chrono::Utc>,
) -> (String, Option<i64>) {
    let who = match serial {
        Some(s) => format!("▶ phone {s}:"),
        None => "▶ phone:".to_string(),
    };
    if let Some(c) = current {
        let step = c
            .step
            .as_deref()
            .map(|s| format!(" step {s}"))
            .unwrap_or_default();
        return (
            format!(
                "{who} task {} ({}, {}){step}",
                c.task_id, c.task_type, c.mode
            ),
            Some((now - c.started_at).num_seconds().max(0)),
        );
    }
    match store.device_pause() {
        Ok(Some(p)) => (format!("{who} paused ({}): {}", p.code, p.message), None),
        Ok(None) => (format!("{who} idle"), None),
        Err(e) => (format!("{who} store unreadable ({e})"), None),
    }
}

/// `42s`, `3m05s`, `1h02m`.
fn clock(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_phone_says_so_and_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Store::path_in(dir.path())).unwrap();
        let now = chrono::Utc::now();
        assert_eq!(
            state_of(Some("tcp:127.0.0.1:5555"), &store, None, now),
            ("▶ phone tcp:127.0.0.1:5555: idle".to_string(), None)
        );
        assert_eq!(state_of(None, &store, None, now).0, "▶ phone: idle");
    }

    #[test]
    fn a_running_task_shows_its_step_and_elapsed_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Store::path_in(dir.path())).unwrap();
        let board = ProgressHandle::new();
        let now = chrono::Utc::now();
        board.begin(
            "t-1",
            "purchase",
            "live",
            now - chrono::Duration::seconds(42),
        );
        board.step(Some("confirm"), "tap");
        let (line, secs) = state_of(Some("A"), &store, board.current().as_ref(), now);
        assert_eq!(line, "▶ phone A: task t-1 (purchase, live) step confirm");
        assert_eq!(secs, Some(42));
    }

    #[test]
    fn elapsed_reads_at_a_glance() {
        assert_eq!(clock(42), "42s");
        assert_eq!(clock(185), "3m05s");
        assert_eq!(clock(3720), "1h02m");
    }
}
