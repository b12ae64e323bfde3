//! The progress board (issue 13): what each phone is doing right now — the task in hand
//! (id, type, mode), the flow's current step and action, since when. One
//! [`ProgressHandle`] per worker: the flow executor begins and clears it around each task,
//! the job driver ([`crate::job::driver`]) sets the step before every action, and the
//! console's live page (`/events`) and a terminal progress line read it.
//!
//! Cheap by design: a `tokio::sync::watch` channel (a lock, a version number and a
//! wake-up); a write never blocks on a reader and never fails, with or without readers.
//! Nothing in it is secret: task ids, step and action names only (no page text).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::watch;

/// The task a worker is running now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Current {
    pub task_id: String,
    /// `collect` or `purchase`.
    pub task_type: String,
    /// `dry_run` or `live` (the task's execution mode as claimed).
    pub mode: String,
    /// The flow's step (`FlowStep`'s name), once the flow asked for its first action.
    pub step: Option<String>,
    /// The action in hand (`observe`, `tap`, `open_url`, …).
    pub action: Option<String>,
    /// When the task began on the phone.
    pub started_at: DateTime<Utc>,
    /// Actions performed so far.
    pub actions: u32,
}

/// A device backend's name and why it fell back from u2, if it did.
pub type BackendInUse = (String, Option<String>);

/// One worker's board: cheap to clone (an `Arc`), shared by writers and readers.
#[derive(Clone)]
pub struct ProgressHandle {
    tx: Arc<watch::Sender<Option<Current>>>,
    /// The device backend the last task used (issue 15): `u2` or `uiautomator`, and why
    /// it fell back from u2 when it did. `None` before the first task.
    backend: Arc<std::sync::Mutex<Option<BackendInUse>>>,
}

impl std::fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressHandle")
            .field("current", &*self.tx.borrow())
            .finish()
    }
}

impl Default for ProgressHandle {
    fn default() -> Self {
        ProgressHandle::new()
    }
}

impl ProgressHandle {
    pub fn new() -> Self {
        let (tx, _) = watch::channel(None);
        ProgressHandle {
            tx: Arc::new(tx),
            backend: Arc::default(),
        }
    }

    /// The device backend the task that just ran used, and its fallback reason.
    pub fn set_backend(&self, name: &str, fallback: Option<String>) {
        *self.backend.lock().unwrap_or_else(|p| p.into_inner()) = Some((name.into(), fallback));
    }

    /// The device backend the last task used (`None`: no task yet).
    pub fn backend(&self) -> Option<BackendInUse> {
        self.backend
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A task began on the phone.
    pub fn begin(&self, task_id: &str, task_type: &str, mode: &str, now: DateTime<Utc>) {
        self.tx.send_replace(Some(Current {
            task_id: task_id.to_string(),
            task_type: task_type.to_string(),
            mode: mode.to_string(),
            step: None,
            action: None,
            started_at: now,
            actions: 0,
        }));
    }

    /// The flow asked for its next action (`step`: its step's name, when it has one).
    /// Readers are woken only when the step or the action changes.
    pub fn step(&self, step: Option<&str>, action: &str) {
        self.tx.send_if_modified(|c| {
            let Some(c) = c.as_mut() else { return false };
            c.actions = c.actions.saturating_add(1);
            let changed = c.step.as_deref() != step.or(c.step.as_deref())
                || c.action.as_deref() != Some(action);
            if let Some(s) = step {
                if c.step.as_deref() != Some(s) {
                    c.step = Some(s.to_string());
                }
            }
            if c.action.as_deref() != Some(action) {
                c.action = Some(action.to_string());
            }
            changed
        });
    }

    /// The task ended (whatever its outcome).
    pub fn clear(&self) {
        self.tx.send_if_modified(|c| c.take().is_some());
    }

    /// What the worker is doing now (`None`: no task in hand).
    pub fn current(&self) -> Option<Current> {
        self.tx.borrow().clone()
    }

    /// A receiver woken at every change (`changed().await`).
    pub fn subscribe(&self) -> watch::Receiver<Option<Current>> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readers_see_begin_steps_and_clear() {
        let p = ProgressHandle::new();
        let mut rx = p.subscribe();
        assert!(p.current().is_none());
        let t0 = Utc::now();
        p.begin("T-1", "collect", "dry_run", t0);
        rx.changed().await.unwrap();
        assert_eq!(rx.borrow_and_update().as_ref().unwrap().task_id, "T-1");
        p.step(Some("open_goods"), "open_url");
        rx.changed().await.unwrap();
        let c = rx.borrow_and_update().clone().unwrap();
        assert_eq!(c.step.as_deref(), Some("open_goods"));
        assert_eq!(c.action.as_deref(), Some("open_url"));
        // The same step and action again: counted, readers not woken.
        p.step(Some("open_goods"), "open_url");
        assert!(!rx.has_changed().unwrap());
        assert_eq!(p.current().unwrap().actions, 2);
        // An action without a step keeps the step.
        p.step(None, "wait");
        rx.changed().await.unwrap();
        assert_eq!(
            rx.borrow_and_update().as_ref().unwrap().step.as_deref(),
            Some("open_goods")
        );
        p.clear();
        rx.changed().await.unwrap();
        assert!(rx.borrow().is_none());
        // Steps without a task in hand are ignored.
        p.step(Some("x"), "tap");
        assert!(p.current().is_none());
    }
}
