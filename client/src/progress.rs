//! The progress board: what each phone is doing right now — the task in hand
//! (id, type, mode), the flow's current step and action, since when. One
//! [`ProgressHandle`] per worker: the flow executor begins and clears it around each task,
//! the job driver ([`crate::job::driver`]) sets the step before every action, and the
//! console's live page (`/events`) and a terminal progress line read it.
//!
//! Cheap by design: a `tokio::sync::watch` channel (a lock, a version number and a
//! wake-up); a write never blocks on a reader and never fails, with or without readers.
//! Nothing in it is secret: task ids, step and action names only (no page text).
//!
//! The board also holds the phone's **turn** ([`PhoneTurn`]): one lock per phone that
//! every device call of the worker holds (`job::turn::TurnSource` wraps the worker's
//! device) and that the console holds for a live screenshot — so a screenshot never
//! races a task's ADB command on the same phone, it only ever falls between two of
//! them. [`ProgressHandle::step`] takes the turn too: the board never enters a step
//! while a screenshot is being taken, and the console, holding the turn, can trust the
//! board when it refuses to take one during a money step ([`Current::money_step`],
//! [`MONEY_STEPS`]).

use std::sync::{Arc, Mutex, MutexGuard};

use cmautobuy_contract::FlowStep;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::watch;

/// The purchase flow's steps from the quantity on — after the options are selected —
/// to the order's reconciliation, and crash recovery of a marked run: the steps where
/// money is at stake. Nothing but the task's own device calls touches the phone during
/// one (the console shows its last screenshot instead of taking one).
pub const MONEY_STEPS: [FlowStep; 8] = [
    FlowStep::SetQuantity,
    FlowStep::CheckAddress,
    FlowStep::ConfirmTotal,
    FlowStep::OrderCensus,
    FlowStep::SubmitOrder,
    FlowStep::LeavePayment,
    FlowStep::ReconcileOrder,
    FlowStep::Recover,
];

/// Whether `step` (a [`FlowStep`]'s name) is one of [`MONEY_STEPS`].
pub fn is_money_step(step: &str) -> bool {
    MONEY_STEPS.iter().any(|s| s.as_str() == step)
}

/// Steps kept in a task's trail (the console's live list); older ones are dropped.
pub const TRAIL_MAX: usize = 40;

/// A step the task entered, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepMark {
    pub step: String,
    pub at: DateTime<Utc>,
}

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
    /// The steps entered so far, in order (at most [`TRAIL_MAX`], the newest kept).
    pub trail: Vec<StepMark>,
}

impl Current {
    /// The money step in hand, if the task is in one ([`MONEY_STEPS`]).
    pub fn money_step(&self) -> Option<&str> {
        self.step.as_deref().filter(|s| is_money_step(s))
    }
}

/// The phone's turn: held by each device call the worker makes and by the console's
/// screenshot (see the module documentation). Never held across two device calls, so a
/// waiter gets the phone between two of them; every device call is bounded by its
/// deadline, so the wait is too.
#[derive(Clone, Default)]
pub struct PhoneTurn(Arc<Mutex<()>>);

impl std::fmt::Debug for PhoneTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PhoneTurn")
    }
}

impl PhoneTurn {
    /// Waits for the phone and holds it until the guard drops (blocking: call it on a
    /// blocking thread). A panic while it was held leaves nothing to repair: the lock
    /// guards no data.
    pub fn hold(&self) -> MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether someone holds the turn now (tests: a device call is made under it).
    #[cfg(test)]
    pub(crate) fn is_held(&self) -> bool {
        self.0.try_lock().is_err()
    }
}

/// A device backend's name and why it fell back from u2, if it did.
pub type BackendInUse = (String, Option<String>);

/// One worker's board: cheap to clone (an `Arc`), shared by writers and readers.
#[derive(Clone)]
pub struct ProgressHandle {
    tx: Arc<watch::Sender<Option<Current>>>,
    /// The device backend the last task used: `u2` or `uiautomator`, and why
    /// it fell back from u2 when it did. `None` before the first task.
    backend: Arc<std::sync::Mutex<Option<BackendInUse>>>,
    /// The phone's turn (see the module documentation).
    turn: PhoneTurn,
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
            turn: PhoneTurn::default(),
        }
    }

    /// The phone's turn this board shares with the worker's device calls.
    pub fn turn(&self) -> PhoneTurn {
        self.turn.clone()
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
            trail: Vec::new(),
        }));
    }

    /// The flow asked for its next action (`step`: its step's name, when it has one).
    /// Readers are woken only when the step or the action changes. Waits for a
    /// screenshot the console is taking to end (the phone's turn, bounded by the
    /// screenshot's deadline), so no step begins during one.
    pub fn step(&self, step: Option<&str>, action: &str) {
        let _turn = self.turn.hold();
        self.tx.send_if_modified(|c| {
            let Some(c) = c.as_mut() else { return false };
            c.actions = c.actions.saturating_add(1);
            let changed = c.step.as_deref() != step.or(c.step.as_deref())
                || c.action.as_deref() != Some(action);
            if let Some(s) = step {
                if c.step.as_deref() != Some(s) {
                    c.step = Some(s.to_string());
                    if c.trail.len() >= TRAIL_MAX {
                        c.trail.remove(0);
                    }
                    c.trail.push(StepMark {
                        step: s.to_string(),
                        at: Utc::now(),
                    });
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

    #[test]
    fn the_trail_lists_each_step_entered_and_money_steps_are_named() {
        let p = ProgressHandle::new();
        p.begin("T-2", "purchase", "live", Utc::now());
        for (s, a) in [
            ("open_goods", "open_url"),
            ("open_goods", "observe"),
            ("select_size", "tap"),
            ("confirm_total", "observe"),
        ] {
            p.step(Some(s), a);
        }
        let c = p.current().unwrap();
        let steps: Vec<&str> = c.trail.iter().map(|m| m.step.as_str()).collect();
        assert_eq!(steps, ["open_goods", "select_size", "confirm_total"]);
        assert_eq!(c.money_step(), Some("confirm_total"));
        for s in [
            "set_quantity",
            "submit_order",
            "leave_payment",
            "reconcile_order",
            "recover",
        ] {
            assert!(is_money_step(s), "{s}");
        }
        for s in [
            "open_goods",
            "read_sku_sheet",
            "select_color",
            "select_size",
            "resolve_spec",
        ] {
            assert!(!is_money_step(s), "{s}");
        }
        for i in 0..(TRAIL_MAX + 5) {
            p.step(Some(&format!("s{i}")), "observe");
        }
        let c = p.current().unwrap();
        assert_eq!(c.trail.len(), TRAIL_MAX);
        assert_eq!(c.trail.last().unwrap().step, format!("s{}", TRAIL_MAX + 4));
    }

    /// The board does not move while the phone's turn is held (a screenshot): a step
    /// waits for it.
    #[test]
    fn a_step_waits_for_the_phones_turn() {
        let p = ProgressHandle::new();
        p.begin("T-3", "purchase", "live", Utc::now());
        let turn = p.turn();
        let held = turn.hold();
        let (tx, rx) = std::sync::mpsc::channel();
        let stepper = {
            let p = p.clone();
            std::thread::spawn(move || {
                p.step(Some("confirm_total"), "observe");
                tx.send(()).unwrap();
            })
        };
        // While the turn is held the step has not happened (the stepper is blocked on
        // the turn; the board still has no step).
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        assert_eq!(p.current().unwrap().step, None);
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the step once the turn is free");
        stepper.join().unwrap();
        assert_eq!(p.current().unwrap().money_step(), Some("confirm_total"));
    }
}
