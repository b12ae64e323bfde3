//! The job shell: everything that drives the pure flows ([`crate::flow`]) against the
//! world — the phone, the store, the Admin, the clock and the artifact directory.
//!
//! # Code map (every file sits above what it imports)
//! - [`driver`] — [`driver::drive`]: performs a flow's actions on a device, parses and
//!   classifies every dump, saves artifacts, records the action trace, bounds the run.
//! - [`guard`] — [`guard::GuardedDevice`]: judges every tap on the freshest dump; refuses
//!   pay actions, blind taps (no dump since the screen may have changed) and any
//!   提交订单 / 确认下单 but the single submit a live job may tap after the mark.
//! - [`source`] — [`source::DeviceSource`]: where a job gets its phone.
//! - [`adb_source`] — the device port over ADB ([`adb_source::AdbSource`]).
//! - [`attempt`] — what every job shares: settings, artifacts, the task report, the §7
//!   failure request.
//! - [`collect`] — collect jobs.
//! - [`purchase`] — purchase jobs and crash recovery: the effects (the durable
//!   irreversible mark, the stored §7.1 resolution) and the store/Admin backend.
//! - [`prepare`] — before a task: wake the screen, swipe a swipe lock away, or end the
//!   task (`retry_wait DEVICE_LOCKED` / `BATTERY_LOW` / `BATTERY_HOT`) before PDD is
//!   touched.
//! - [`skew`] — the host ↔ phone clock skew for the reconcile window (`date +%s`).
//! - [`account`] — the account check between tasks: 个人中心 read
//!   through [`crate::flow::account::AccountFlow`].
//! - [`self_test`] — the self-test: a dry-run purchase on
//!   `self_test_goods_id`, options read off its sheet, no Admin involved.
//! - [`turn`] — [`turn::TurnSource`]: the worker's device with every call under the
//!   phone's turn ([`crate::progress::PhoneTurn`]), which the console's live screenshot
//!   takes too: never two commands racing on one phone.
//! - [`exec`] — [`exec::FlowExecutor`]: the claim loop's [`crate::executor::Executor`].
//!
//! # Architecture invariants
//! - **Only the shell does I/O for a flow**: flows get observations, the shell performs
//!   actions; the clock, sleeps and failpoints live here.
//! - **The submit tap exists only after [`crate::store::Store::mark_irreversible_once`]
//!   answered `Marked`** for the run (typed [`crate::flow::EffectOutcome::Marked`]); a
//!   refusal is [`crate::flow::EffectOutcome::Refused`], never a message to parse.

pub mod account;
pub mod adb_source;
pub mod attempt;
pub mod collect;
pub mod driver;
pub mod exec;
pub mod guard;
pub mod prepare;
pub mod purchase;
pub mod self_test;
#[cfg(test)]
pub(crate) mod sim_device;
pub mod skew;
pub mod source;
#[cfg(test)]
mod tests;
pub mod turn;
