//! `run`'s progress lines (issue 13 item 5): on an interactive run — stderr a terminal,
//! text logs — one line per phone on stderr: the phone, the task in hand (id, type,
//! mode, local state) and how long since it was claimed, or `idle` / `paused (CODE)`.
//!
//! Printed as whole lines between the log lines (never a partial line, never cursor
//! movement, so a log line is never overwritten or broken): whenever what a phone does
//! changes, and every [`REPEAT`] while a task runs. Read from each phone's store (its
//! unfinished task and its device pause), every [`EVERY`]; the driver's current step is
//! not in the store, so it is not shown.
//
// TODO(D): when the console's progress board (per worker: task, step, start) is on main,
// read the step from it here.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use cmautobuy_client::config::LogFormat;
use cmautobuy_client::store::Store;

/// How often the stores are read.
const EVERY: Duration = Duration::from_secs(2);
/// A running task's line is printed again this often (its elapsed time moves).
const REPEAT: Duration = Duration::from_secs(30);

/// Whether this run shows progress lines: stderr is a terminal and the logs are text.
pub fn wanted(format: LogFormat) -> bool {
    format == LogFormat::Text && std::io::stderr().is_terminal()
}

/// Prints the progress lines of `phones` (serial — `None` for a single-phone run — and
/// store) until the process ends.
pub async fn lines(phones: Vec<(Option<String>, Store)>) {
    let mut last: Vec<String> = Vec::new();
    let mut printed = Instant::now();
    loop {
        let phones2 = phones.clone();
        let now = chrono::Utc::now();
        let Ok(current) = tokio::task::spawn_blocking(move || {
            phones2
                .iter()
                .map(|(serial, store)| state_of(serial.as_deref(), store, now))
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

/// One phone's line (without the elapsed time) and the seconds since its task was
/// claimed (`None`: no task in hand).
fn state_of(
    serial: Option<&str>,
    store: &Store,
    now: chrono::DateTime<chrono::Utc>,
) -> (String, Option<i64>) {
    let who = match serial {
        Some(s) => format!("▶ phone {s}:"),
        None => "▶ phone:".to_string(),
    };
    match store.unfinished_tasks() {
        Err(e) => (format!("{who} store unreadable ({e})"), None),
        Ok(tasks) => match tasks.first() {
            Some(t) => {
                let since = chrono::DateTime::parse_from_rfc3339(&t.claimed_at)
                    .map(|c| (now - c.with_timezone(&chrono::Utc)).num_seconds().max(0))
                    .unwrap_or(0);
                (
                    format!(
                        "{who} task {} ({}, {}) {}",
                        t.remote_task_id,
                        t.task_type,
                        t.execution_mode,
                        t.state.as_str()
                    ),
                    Some(since),
                )
            }
            None => match store.device_pause() {
                Ok(Some(p)) => (format!("{who} paused ({}): {}", p.code, p.message), None),
                _ => (format!("{who} idle"), None),
            },
        },
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
            state_of(Some("tcp:127.0.0.1:5555"), &store, now),
            ("▶ phone tcp:127.0.0.1:5555: idle".to_string(), None)
        );
        assert_eq!(state_of(None, &store, now).0, "▶ phone: idle");
    }

    #[test]
    fn elapsed_reads_at_a_glance() {
        assert_eq!(clock(42), "42s");
        assert_eq!(clock(185), "3m05s");
        assert_eq!(clock(3720), "1h02m");
    }
}
