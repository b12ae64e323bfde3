//! The driver: runs a [`Flow`] on a phone.
//!
//! [`drive`] is the only place where a flow's actions meet I/O: it performs each
//! [`Action`] on a [`Device`] (gestures, deep links, dumps, screenshots, the goods-id
//! read through `dumpsys activity top`, parsed here so flows see only the id) or on the
//! executor's [`Effects`] (durable marks, Admin calls), parses and classifies every
//! dump, saves every dump and screenshot as an artifact, takes a screenshot when a flow
//! fails, counts device round trips, records the action trace tests assert on, and
//! stops a flow that exceeds its action budget.
//!
//! Every gesture goes through the [`GuardedDevice`]: a tap with the kind the flow
//! declared ([`TapKind`]), and the driver arms the one submit when the store answers
//! `Marked` to the irreversible mark. A refused tap reaches the flow as
//! [`Observation::TapRefused`].
//!
//! **Stale dumps.** A dump byte-identical to the previous one right after a gesture (tap,
//! swipe, back, deep link) may show a screen that has not caught up yet: the flow is told
//! [`Observation::StaleDump`] (it pauses its poll pause and dumps again), at most
//! [`STALE_REDUMPS`] times in a row; then the identical dump is handed over as it is — a
//! screen that truly did not change (a tap on an option already selected) is legitimate.
//!
//! The driver is synchronous: the ADB client is blocking and every device call carries
//! its own deadline. Async callers run it on a blocking thread.

use std::time::{Duration, Instant};

use cmautobuy_contract::FlowStep;
use serde::Serialize;

use super::guard::GuardedDevice;
use crate::artifacts::{ActionEntry, AttemptArtifacts, TapTarget, TraceRecord};
use crate::clock::Clock;
use crate::device::{Device, DeviceError};
use crate::flow::{
    AbortReason, Action, Effect, EffectOutcome, Flow, FlowOutcome, GoodsIdRead, Observation,
    Observed, TapKind,
};
use crate::progress::ProgressHandle;
use crate::screen::activity::{displayed_goods_id, ACTIVITY_TOP_ARGV};
use crate::screen::windows::CoverKind;
use crate::screen::{classify, TopGoods, Tree};

/// The shell command that puts the notification shade away.
pub const COLLAPSE_SHADE_ARGV: &[&str] = &["cmd", "statusbar", "collapse"];

/// Dumps asked again, in a row, when a dump right after a gesture is byte-identical to
/// the one before it.
pub const STALE_REDUMPS: u32 = 2;

/// Effects outside the phone (store, Admin). Collect asks for none.
pub trait Effects {
    fn perform(&mut self, effect: &Effect) -> EffectOutcome;
}

/// For flows that need no effects: every effect fails, not retryable.
pub struct NoEffects;

impl Effects for NoEffects {
    fn perform(&mut self, effect: &Effect) -> EffectOutcome {
        EffectOutcome::Failed {
            message: format!("effect not available here: {effect:?}"),
            retryable: false,
        }
    }
}

/// Driver limits.
#[derive(Clone, Copy, Debug)]
pub struct DriveLimits {
    /// Actions a flow may ask for before it is aborted (a safety net: flows bound
    /// themselves).
    pub max_actions: u32,
    /// Take a screenshot when a flow fails (evidence, `decisions.md` §7).
    pub screenshot_on_failure: bool,
    /// Take one screenshot of the screen at the first dump of each money step
    /// ([`crate::progress::MONEY_STEPS`]: the quantity, address, total, submit, leaving
    /// the payment, the reconciliation): the attempt's evidence of what the phone
    /// showed when money was at stake, which the console's viewer draws the dump's
    /// findings over. The console never screenshots the phone during those steps; the
    /// task does it itself, between its own calls. Off by default (flow cases and
    /// tests keep their round trips); the flow executor turns it on.
    pub money_screenshots: bool,
}

impl Default for DriveLimits {
    fn default() -> Self {
        DriveLimits {
            max_actions: 400,
            screenshot_on_failure: true,
            money_screenshots: false,
        }
    }
}

/// Device round trips and time of one drive.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DriveStats {
    pub dumps: u32,
    pub dump_failures: u32,
    /// Dumps (counted in `dumps`) that were byte-identical to the previous one right
    /// after a gesture, and were asked again.
    pub stale_dumps: u32,
    pub taps: u32,
    pub swipes: u32,
    pub backs: u32,
    pub open_urls: u32,
    pub screenshots: u32,
    /// `dumpsys activity top` reads of the goods id.
    pub goods_id_reads: u32,
    /// `dumpsys window windows` reads by the guard (one per dump a tap was judged on).
    pub window_reads: u32,
    /// Taps refused because another package's window covered the point.
    pub covered_taps: u32,
    /// `cmd statusbar collapse` sent.
    pub collapses: u32,
    /// Dumps that showed no PDD window because another package's window had the focus.
    pub covered_dumps: u32,
    /// Times the lock screen came up mid-task (the screen went off) and the phone was
    /// woken and swiped open again (each costs a few round trips, counted here once).
    pub unlocks: u32,
    pub waits: u32,
    pub device_errors: u32,
    /// Wall time of the whole drive, ms.
    pub wall_ms: u64,
}

impl DriveStats {
    /// Every command sent to the phone.
    pub fn round_trips(&self) -> u32 {
        self.dumps
            + self.taps
            + self.swipes
            + self.backs
            + self.open_urls
            + self.screenshots
            + self.goods_id_reads
            + self.window_reads
            + self.collapses
            + self.unlocks
    }
}

/// One performed action, for tests and the run log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceEntry {
    pub kind: &'static str,
    pub step: Option<String>,
    /// Tap label, screen kind of a dump, URL of a deep link, …
    pub detail: String,
}

/// What [`drive`] returns.
#[derive(Debug)]
pub struct DriveReport {
    pub outcome: FlowOutcome,
    pub stats: DriveStats,
    pub trace: Vec<TraceEntry>,
}

/// Runs `flow` to its end on `device` (every tap judged by its guard).
pub fn drive<F, D, E, C>(
    flow: &mut F,
    device: &GuardedDevice<D>,
    effects: &mut E,
    clock: &C,
    artifacts: Option<&mut AttemptArtifacts>,
    limits: DriveLimits,
) -> DriveReport
where
    F: Flow + ?Sized,
    D: Device,
    E: Effects + ?Sized,
    C: Clock + ?Sized,
{
    drive_with_progress(flow, device, effects, clock, artifacts, limits, None)
}

/// As [`drive`], and puts each action's step and kind on the worker's progress board
/// ([`ProgressHandle::step`]) before performing it.
pub fn drive_with_progress<F, D, E, C>(
    flow: &mut F,
    device: &GuardedDevice<D>,
    effects: &mut E,
    clock: &C,
    artifacts: Option<&mut AttemptArtifacts>,
    limits: DriveLimits,
    progress: Option<&ProgressHandle>,
) -> DriveReport
where
    F: Flow + ?Sized,
    D: Device,
    E: Effects + ?Sized,
    C: Clock + ?Sized,
{
    let started = Instant::now();
    let mut artifacts = artifacts;
    let mut stats = DriveStats::default();
    let mut trace: Vec<TraceEntry> = Vec::new();
    // The same actions for the attempt's `trace.json` (the console's viewer), with the
    // tap points and the file each action saved.
    let mut records: Vec<TraceRecord> = Vec::new();
    let mut obs = Observation::Start;
    let mut actions: u32 = 0;
    let mut stale = Staleness::default();
    // The last dump parsed: the node a tap aims at is recorded from it.
    let mut last_tree: Option<Tree> = None;
    // The money steps already screenshot in this drive (`DriveLimits::money_screenshots`).
    let mut money_shot: Vec<FlowStep> = Vec::new();
    let window_reads_before = device.window_reads();
    let outcome = loop {
        let now = clock.now();
        let action = flow.observe(now, obs);
        if let Some(point) = flow.checkpoint() {
            crate::failpoint::hit(point);
        }
        if let Action::Finish(outcome) = action {
            break outcome;
        }
        actions += 1;
        if actions > limits.max_actions {
            break FlowOutcome::Failed(flow.abort(now, AbortReason::StepBudget { actions }));
        }
        let step_name = step_of(&action).map(|s| s.as_str().to_string());
        if let Some(p) = progress {
            p.step(step_name.as_deref(), action.kind());
        }
        let mut detail = String::new();
        let saved_before = artifacts.as_deref().map_or(0, |a| a.entries().len());
        obs = match &action {
            Action::Observe { step } => {
                stats.dumps += 1;
                let result = device.dump_ui();
                let at = clock.now();
                match result {
                    Ok(dump) => {
                        let artifact_id = artifacts
                            .as_deref_mut()
                            .and_then(|a| a.save(step.as_str(), "xml", dump.xml.as_bytes(), at));
                        let screen = classify(&dump.tree);
                        detail = screen.kind().as_str().to_string();
                        // No PDD window in the dump: a shade, a system dialog, a chooser
                        // or a keyboard may have the focus.
                        let cover = if dump.tree.roots().next().is_none() {
                            device.foreign_focus().filter(|c| {
                                !matches!(c.kind, CoverKind::OtherApp | CoverKind::SystemBar)
                            })
                        } else {
                            None
                        };
                        // The lock screen shares the shade's window (`NotificationShade`):
                        // the screen went off mid-task. Collapsing cannot put a keyguard
                        // away; waking and one upward swipe can, as before a task.
                        let unlocked = cover.as_ref().is_some_and(|c| {
                            c.kind == CoverKind::Shade
                                && stats.unlocks < MAX_UNLOCKS
                                && unlock_if_locked(device, clock, &mut stats)
                        });
                        if unlocked {
                            if let Some(a) = artifacts.as_deref_mut() {
                                a.record(ActionEntry::new("unlock", None));
                            }
                        }
                        let observed = if unlocked {
                            detail.push_str(" (lock screen: woke and swiped it open)");
                            Observation::StaleDump
                        } else if let Some(c) = cover {
                            stats.covered_dumps += 1;
                            detail.push_str(&format!(
                                " (focus on {} `{}`)",
                                c.kind.as_str(),
                                c.window
                            ));
                            Observation::Covered {
                                kind: c.kind,
                                window: c.window,
                            }
                        } else if stale.is_stale(dump.xml) {
                            stats.stale_dumps += 1;
                            detail.push_str(" (stale: identical to the dump before the gesture)");
                            Observation::StaleDump
                        } else {
                            Observation::Screen(Box::new(Observed {
                                screen,
                                account: crate::screen::profile::read(&dump.tree),
                                artifact_id,
                            }))
                        };
                        last_tree = Some(dump.tree);
                        observed
                    }
                    Err(e) if is_dump_failure(&e) => {
                        stats.dump_failures += 1;
                        detail = format!("dump failed: {}", e.code());
                        tracing::warn!(step = %step.as_str(), code = e.code(), "UI dump unusable");
                        record_dump_failed(artifacts.as_deref_mut(), step, e.code());
                        // The parser's own words (the failure code says it was a dump).
                        let message = match &e {
                            DeviceError::Dump(d) => d.to_string(),
                            other => other.to_string(),
                        };
                        Observation::DumpFailed {
                            code: e.code().to_string(),
                            message,
                            retryable: e.is_retryable(),
                        }
                    }
                    Err(e) => {
                        // A dump the device did not answer (a deadline, the phone gone):
                        // logged as every other device call's failure, so a hung dump's
                        // 20 s show in the log as what they were.
                        stats.dump_failures += 1;
                        stats.device_errors += 1;
                        record_dump_failed(artifacts.as_deref_mut(), step, e.code());
                        detail = format!("device error: {e}");
                        tracing::warn!(error = %e, retryable = e.is_retryable(), "device call failed");
                        Observation::DeviceError {
                            message: e.to_string(),
                            retryable: e.is_retryable(),
                        }
                    }
                }
            }
            Action::Screenshot { step } => {
                stats.screenshots += 1;
                match device.screenshot() {
                    Ok(png) => {
                        let at = clock.now();
                        if let Some(a) = artifacts.as_deref_mut() {
                            a.save(step.as_str(), "png", &png.bytes, at);
                        }
                        Observation::Done
                    }
                    Err(e) => {
                        stats.device_errors += 1;
                        device_error(e, &mut detail)
                    }
                }
            }
            Action::OpenUrl { url, .. } => {
                stats.open_urls += 1;
                detail = url.clone();
                stale.gesture();
                done(device.open_url(url), &mut stats, &mut detail)
            }
            Action::Tap {
                at, label, kind, ..
            } => {
                detail = format!("{label} @{},{}", at.x, at.y);
                if *kind == TapKind::Submit {
                    detail.push_str(" (submit)");
                }
                match device.tap_labelled(*at, *kind, label) {
                    // Refused: nothing was sent to the phone (not a round trip).
                    Err(DeviceError::TapRefused(reason)) => {
                        detail.push_str(&format!(" (refused: {reason})"));
                        Observation::TapRefused { reason }
                    }
                    Err(DeviceError::TapCovered { kind, window }) => {
                        stats.covered_taps += 1;
                        detail.push_str(&format!(" (covered by {} `{window}`)", kind.as_str()));
                        Observation::Covered { kind, window }
                    }
                    r => {
                        stats.taps += 1;
                        stale.gesture();
                        done(r, &mut stats, &mut detail)
                    }
                }
            }
            Action::Swipe {
                from,
                to,
                duration_ms,
                ..
            } => {
                stats.swipes += 1;
                detail = format!("{},{} -> {},{}", from.x, from.y, to.x, to.y);
                stale.gesture();
                done(
                    device.swipe(*from, *to, Duration::from_millis(u64::from(*duration_ms))),
                    &mut stats,
                    &mut detail,
                )
            }
            Action::Back { .. } => {
                stats.backs += 1;
                stale.gesture();
                done(device.back(), &mut stats, &mut detail)
            }
            Action::CollapseShade { .. } => {
                stats.collapses += 1;
                stale.gesture();
                detail = "cmd statusbar collapse".into();
                let r = match device.shell(COLLAPSE_SHADE_ARGV) {
                    Ok(o) if o.success() => Ok(()),
                    Ok(o) => Err(DeviceError::CommandFailed {
                        program: "cmd statusbar".into(),
                        exit_code: o.exit_code,
                        stderr: o.stderr_text().chars().take(200).collect(),
                    }),
                    Err(e) => Err(e),
                };
                done(r, &mut stats, &mut detail)
            }
            Action::ReadGoodsId { step } => {
                stats.goods_id_reads += 1;
                match device.shell(ACTIVITY_TOP_ARGV) {
                    Ok(out) => {
                        let at = clock.now();
                        // The raw output is evidence (it names pages, not people): saved,
                        // never logged.
                        let artifact_id = artifacts.as_deref_mut().and_then(|a| {
                            a.save(
                                &format!("{}-activity-top", step.as_str()),
                                "txt",
                                &out.stdout,
                                at,
                            )
                        });
                        let shown = if out.success() {
                            displayed_goods_id(&out.stdout_text())
                        } else {
                            // A phone that cannot print it shows no goods id: identity
                            // falls back to the title (or stays unverified).
                            tracing::warn!(
                                exit_code = out.exit_code,
                                "dumpsys activity top failed"
                            );
                            detail = format!("dumpsys exit {}: ", out.exit_code);
                            TopGoods::NotShown
                        };
                        detail.push_str(&shown.describe());
                        Observation::GoodsId(GoodsIdRead { shown, artifact_id })
                    }
                    Err(e) => {
                        stats.device_errors += 1;
                        device_error(e, &mut detail)
                    }
                }
            }
            Action::Wait { duration } => {
                stats.waits += 1;
                detail = format!("{} ms", duration.as_millis());
                clock.wait_blocking(*duration);
                Observation::Waited
            }
            Action::Effect(effect) => {
                detail = effect_detail(effect);
                let out = effects.perform(effect);
                if matches!(effect, Effect::MarkIrreversible { .. })
                    && matches!(out, EffectOutcome::Marked { .. })
                {
                    // The store committed the mark: the guard arms the one submit.
                    device.marked();
                }
                Observation::Effect(out)
            }
            Action::Finish(_) => unreachable!("handled above"),
        };
        if let Some(a) = artifacts.as_deref_mut() {
            if let Some(entry) = action_entry(&action, &obs, last_tree.as_ref()) {
                a.record(entry);
            }
        }
        let (at, to) = match &action {
            Action::Tap { at, .. } => (Some([at.x, at.y]), None),
            Action::Swipe { from, to, .. } => (Some([from.x, from.y]), Some([to.x, to.y])),
            _ => (None, None),
        };
        records.push(TraceRecord {
            kind: action.kind().to_string(),
            step: step_name.clone(),
            detail: detail.clone(),
            at,
            to,
            file: saved_file(artifacts.as_deref(), saved_before),
        });
        trace.push(TraceEntry {
            kind: action.kind(),
            step: step_name,
            detail,
        });
        if let (Action::Observe { step }, Observation::Screen(_)) = (&action, &obs) {
            if limits.money_screenshots
                && crate::progress::is_money_step(step.as_str())
                && !money_shot.contains(step)
            {
                money_shot.push(step.clone());
                let saved_before = artifacts.as_deref().map_or(0, |a| a.entries().len());
                stats.screenshots += 1;
                match device.screenshot() {
                    Ok(png) => {
                        if let Some(a) = artifacts.as_deref_mut() {
                            a.save(step.as_str(), "png", &png.bytes, clock.now());
                        }
                        // Right after the dump in the trace: the viewer draws the dump's
                        // findings over this picture of the same screen.
                        records.push(TraceRecord {
                            kind: "screenshot".into(),
                            step: Some(step.as_str().to_string()),
                            detail: "money step".into(),
                            at: None,
                            to: None,
                            file: saved_file(artifacts.as_deref(), saved_before),
                        });
                        trace.push(TraceEntry {
                            kind: "screenshot",
                            step: Some(step.as_str().to_string()),
                            detail: "money step".into(),
                        });
                    }
                    // Evidence only: the flow goes on without it.
                    Err(e) => {
                        tracing::warn!(step = %step.as_str(), error = %e, "no money-step screenshot")
                    }
                }
            }
        }
    };
    if let FlowOutcome::Failed(f) = &outcome {
        tracing::info!(code = %f.code.as_str(), step = %f.step.as_str(), status = f.status.as_str(), "flow failed");
        if limits.screenshot_on_failure {
            stats.screenshots += 1;
            let saved_before = artifacts.as_deref().map_or(0, |a| a.entries().len());
            match device.screenshot() {
                Ok(png) => {
                    let at = clock.now();
                    if let Some(a) = artifacts.as_deref_mut() {
                        a.save(
                            &format!("failure-{}", f.step.as_str()),
                            "png",
                            &png.bytes,
                            at,
                        );
                    }
                    records.push(TraceRecord {
                        kind: "screenshot".into(),
                        step: Some(f.step.as_str().to_string()),
                        detail: "failure".into(),
                        at: None,
                        to: None,
                        file: saved_file(artifacts.as_deref(), saved_before),
                    });
                    trace.push(TraceEntry {
                        kind: "screenshot",
                        step: Some(f.step.as_str().to_string()),
                        detail: "failure".into(),
                    });
                }
                Err(e) => {
                    stats.device_errors += 1;
                    tracing::warn!(error = %e, "no failure screenshot");
                }
            }
        }
    }
    if let Some(a) = artifacts {
        a.flush();
        a.append_trace(&records);
    }
    stats.window_reads = device.window_reads().saturating_sub(window_reads_before);
    stats.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    DriveReport {
        outcome,
        stats,
        trace,
    }
}

/// A failed dump as a manifest action.
fn record_dump_failed(artifacts: Option<&mut AttemptArtifacts>, step: &FlowStep, code: &str) {
    if let Some(a) = artifacts {
        let mut e = ActionEntry::new("dump_failed", Some(step.as_str()));
        e.code = Some(code.to_string());
        a.record(e);
    }
}

/// The manifest's record of a device action just performed (spec §A), with
/// what came of it; `None` for what is not a device action of its own (dumps,
/// screenshots and `dumpsys activity top` are artifact entries; spec resolutions never
/// touch the phone).
fn action_entry(action: &Action, obs: &Observation, tree: Option<&Tree>) -> Option<ActionEntry> {
    let result = match obs {
        Observation::TapRefused { .. } => "refused",
        Observation::Covered { .. } => "covered",
        Observation::DeviceError { .. } | Observation::InputRefused { .. } => "error",
        _ => "sent",
    };
    let step = step_of(action);
    let mut e = ActionEntry::new("", step.as_ref().map(FlowStep::as_str));
    match action {
        Action::OpenUrl { url, .. } => {
            e.action = "open_url".into();
            e.url = Some(url.clone());
        }
        Action::Tap {
            at, label, kind, ..
        } => {
            e.action = "tap".into();
            e.at = Some([at.x, at.y]);
            e.label = Some(label.clone());
            e.tap_kind = Some(
                match kind {
                    TapKind::InPage => "in_page",
                    TapKind::ChangesScreen => "changes_screen",
                    TapKind::Submit => "submit",
                }
                .into(),
            );
            e.target = Some(tree.and_then(|t| {
                crate::screen::aim::aimed_node(t, *at, label).map(|n| {
                    let b = n.bounds();
                    TapTarget {
                        text: n.text().to_string(),
                        desc: n.desc().to_string(),
                        resource_id: n.resource_id().to_string(),
                        class: n.class().to_string(),
                        bounds: [b.left, b.top, b.right, b.bottom],
                    }
                })
            }));
        }
        Action::Swipe {
            from,
            to,
            duration_ms,
            ..
        } => {
            e.action = "swipe".into();
            e.from = Some([from.x, from.y]);
            e.to = Some([to.x, to.y]);
            e.duration_ms = Some(*duration_ms);
        }
        Action::Back { .. } => {
            e.action = "key".into();
            e.keycode = Some(KEYCODE_BACK);
        }
        Action::CollapseShade { .. } => e.action = "collapse_shade".into(),
        Action::Wait { duration } => {
            e.action = "wait".into();
            e.step = None;
            e.ms = Some(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
            return Some(e);
        }
        Action::Effect(Effect::MarkIrreversible { confirmation }) => {
            e.action = "mark_irreversible".into();
            e.goods_id = Some(confirmation.goods_id.clone());
            e.total_cent = Some(confirmation.total.get());
            e.quantity = Some(confirmation.quantity);
            e.options = Some(confirmation.options.values().cloned().collect());
            e.result = Some(
                match obs {
                    Observation::Effect(EffectOutcome::Marked { .. }) => "marked",
                    Observation::Effect(EffectOutcome::Refused { .. }) => "refused",
                    _ => "failed",
                }
                .into(),
            );
            return Some(e);
        }
        _ => return None,
    }
    e.result = Some(result.into());
    Some(e)
}

/// Android's `KEYCODE_BACK`.
const KEYCODE_BACK: i32 = 4;

/// The file the action just performed saved, if it saved one (the manifest grew).
fn saved_file(artifacts: Option<&AttemptArtifacts>, before: usize) -> Option<String> {
    artifacts
        .and_then(|a| a.entries().get(before))
        .map(|e| e.file.clone())
}

/// Tells a stale dump from a fresh one: the previous dump's bytes, whether a gesture
/// went out since, and how many identical dumps were asked again in a row.
#[derive(Default)]
struct Staleness {
    last: Option<String>,
    after_gesture: bool,
    redumps: u32,
}

impl Staleness {
    /// A gesture went out (or may have).
    fn gesture(&mut self) {
        self.after_gesture = true;
        self.redumps = 0;
    }

    /// Whether `xml` is to be dumped again rather than handed over.
    fn is_stale(&mut self, xml: String) -> bool {
        if self.after_gesture
            && self.redumps < STALE_REDUMPS
            && self.last.as_deref() == Some(xml.as_str())
        {
            self.redumps += 1;
            return true;
        }
        self.after_gesture = false;
        self.redumps = 0;
        self.last = Some(xml);
        false
    }
}

fn step_of(a: &Action) -> Option<FlowStep> {
    match a {
        Action::Observe { step }
        | Action::Screenshot { step }
        | Action::OpenUrl { step, .. }
        | Action::Tap { step, .. }
        | Action::Swipe { step, .. }
        | Action::Back { step }
        | Action::CollapseShade { step }
        | Action::ReadGoodsId { step } => Some(step.clone()),
        Action::Effect(e @ (Effect::MarkIrreversible { .. } | Effect::NoteProceed { .. })) => {
            Some(e.step())
        }
        _ => None,
    }
}

/// How often one task may wake and swipe open a lock screen that came up mid-task.
const MAX_UNLOCKS: u32 = 2;

/// When the phone shows its lock screen now (screen off, or a swipe keyguard up), wakes
/// it and swipes it open (`doctor::wake_and_unlock`, verified by re-reads); `true` when it
/// is open again. A PIN lock is never tried; battery thresholds do not apply mid-task
/// (an order may be waiting to be reconciled).
fn unlock_if_locked<D: Device, C: Clock + ?Sized>(
    device: &GuardedDevice<D>,
    clock: &C,
    stats: &mut DriveStats,
) -> bool {
    use crate::device::doctor;
    use crate::device::state::{Keyguard, ScreenPower, Thresholds};
    let Ok(st) = doctor::read_state(device) else {
        return false;
    };
    if st.screen != ScreenPower::Off && st.keyguard != Keyguard::Swipe {
        return false;
    }
    stats.unlocks += 1;
    let any_battery = Thresholds {
        battery_min_percent: 0,
        battery_max_temp_c: i32::MAX,
    };
    match doctor::wake_and_unlock(device, any_battery, &|d| clock.wait_blocking(d)) {
        Ok(_) => {
            tracing::info!("the lock screen came up mid-task: woke the phone and swiped it open");
            true
        }
        Err(p) => {
            tracing::warn!(code = %p.code, reason = %p.message, "the lock screen came up mid-task and stays");
            false
        }
    }
}

/// The phone answered but the dump is unusable (uiautomator's failure texts, malformed
/// XML): the flow sees [`Observation::DumpFailed`], not a device error.
fn is_dump_failure(e: &DeviceError) -> bool {
    matches!(
        e,
        DeviceError::Dump(_) | DeviceError::DumpFileMissing { .. }
    )
}

fn done(r: Result<(), DeviceError>, stats: &mut DriveStats, detail: &mut String) -> Observation {
    match r {
        Ok(()) => Observation::Done,
        Err(e) => {
            stats.device_errors += 1;
            device_error(e, detail)
        }
    }
}

fn device_error(e: DeviceError, detail: &mut String) -> Observation {
    detail.push_str(&format!(" (device error: {e})"));
    tracing::warn!(error = %e, retryable = e.is_retryable(), "device call failed");
    if let DeviceError::InputDenied { .. } = e {
        return Observation::InputRefused {
            message: e.to_string(),
        };
    }
    Observation::DeviceError {
        message: e.to_string(),
        retryable: e.is_retryable(),
    }
}

/// A short trace line for an effect (no page text beyond the goods id).
fn effect_detail(e: &Effect) -> String {
    match e {
        Effect::MarkIrreversible { confirmation } => format!(
            "mark_irreversible goods {} total {} fen",
            confirmation.goods_id,
            confirmation.total.get()
        ),
        Effect::ResolveSpec(req) => format!(
            "resolve_spec {} candidates, target size {}",
            req.candidates.len(),
            req.target_size.chars().take(40).collect::<String>()
        ),
        Effect::NoteProceed { confirmation } => format!(
            "note_proceed goods {} (a 确定 that should open 确认订单)",
            confirmation.goods_id
        ),
    }
}
