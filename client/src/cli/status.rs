//! `cmautobuy-client status`: identity, registration outcome, operator alerts, task and
//! outbox counts, tasks in flight, the recent outcomes with their reason and next step
//! (Chinese first, English beside: [`cmautobuy_client::reasons`]), orders waiting for
//! their phone to be reconciled and undelivered outbox items. The text shows times in
//! this host's time zone (the store keeps UTC); `--json` is one object, its times RFC
//! 3339 UTC as stored.

use clap::Args;
use cmautobuy_client::alert::AlertKind;
use cmautobuy_client::secret::scrub;

use super::args::Globals;
use super::exit::Failure;
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct StatusArgs {
    #[arg(long)]
    json: bool,
    /// With several phones: this phone's store only (default: every phone, one section
    /// each; `--json`: `{"phones": [...]}`).
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
}

pub fn run(g: &Globals, a: StatusArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(), LogTo::Stderr)?;
    let stores = setup::phone_stores(&cfg, a.device.as_deref())?;
    if let [store] = stores.as_slice() {
        if let Some(v) = report(&cfg, store, a.json)? {
            print_json(&v);
        }
        return Ok(());
    }
    let mut all = Vec::new();
    for (i, store) in stores.iter().enumerate() {
        if !a.json {
            if i > 0 {
                println!();
            }
            let device = store.settings()?.device.unwrap_or_else(|| "-".into());
            println!("=== phone {device} ===");
        }
        all.extend(report(&cfg, store, a.json)?);
    }
    if a.json {
        print_json(&serde_json::json!({ "phones": all }));
    }
    Ok(())
}

/// The JSON report, scrubbed of every known secret ([`scrub`]): stored text from outside
/// (an Admin's error, written before its echo was cleaned) is printed only so.
fn print_json(v: &serde_json::Value) {
    println!(
        "{}",
        scrub(&serde_json::to_string_pretty(v).unwrap_or_default())
    );
}

/// A stored time (RFC 3339, UTC) in this host's time zone, with its offset
/// (`2026-12-05 19:02:03+08:00`); as stored when it does not parse.
fn local(t: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S%:z")
                .to_string()
        })
        .unwrap_or_else(|_| t.to_string())
}

/// How many recent outcomes the text lists.
const RECENT: u32 = 10;

/// A recent outcome in two lines: when, what, the code; then its reason and next step,
/// Chinese first — the text the failure was reported with (`diagnostics.operator`), else
/// its code's ([`cmautobuy_client::reasons::for_code`]).
fn outcome_lines(o: &cmautobuy_client::store::RecentOutcome) -> String {
    use cmautobuy_client::reasons::{for_code, OperatorText};
    let label = o.outcome.clone().unwrap_or_else(|| o.state.clone());
    let mut what = match (&o.code, &o.order_sn) {
        (Some(code), _) => format!("{} {code}", failure_state(o)),
        (None, Some(sn)) => format!("{label}, order {sn}"),
        (None, None) => label,
    };
    if o.state == "reporting" {
        what.push_str(" (待 Admin 接收 / not yet accepted by the Admin)");
    }
    let mut out = format!(
        "  {} task {} ({}) {what}",
        local(&o.updated_at),
        o.remote_task_id,
        o.task_type
    );
    if let Some(code) = &o.code {
        let text = o
            .operator
            .clone()
            .and_then(|v| serde_json::from_value::<OperatorText>(v).ok())
            .unwrap_or_else(|| for_code(&cmautobuy_contract::FailureCode::parse(code)));
        out.push_str(&format!(
            "\n      {}：{} / {}: {}",
            scrub(&text.zh),
            scrub(&text.next_zh),
            scrub(&text.en),
            scrub(&text.next_en)
        ));
    }
    out
}

/// A failure's status: the run's outcome label says it (`manual_review:CODE`), also
/// while the Admin has not accepted it yet (`reporting`).
fn failure_state(o: &cmautobuy_client::store::RecentOutcome) -> String {
    o.outcome
        .as_deref()
        .and_then(|l| l.split(':').next())
        .unwrap_or(o.state.as_str())
        .to_string()
}

/// When the claim loop waits for a transient claim error, above all the Admin's
/// `Retry-After`: `领取等待至 … / claiming waits until …`, local time then UTC.
fn claim_wait_line(w: &cmautobuy_client::store::ClaimWait) -> String {
    let local = chrono::DateTime::parse_from_rfc3339(&w.until)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| w.until.clone());
    let status = w.status.map(|s| format!("HTTP {s}, ")).unwrap_or_default();
    match w.retry_after_secs {
        Some(n) => format!(
            "CLAIMING WAITS 领取等待至 {local}（{until}）：Admin 要求 {n} 秒后再试 / claiming waits until {local} ({until}): the Admin asked for Retry-After {n} s ({status}{reason})",
            until = w.until,
            reason = scrub(&w.reason),
        ),
        None => format!(
            "claiming backs off 领取退避至 {local}（{until}）/ claiming backs off until {local} ({until}) after: {status}{reason}",
            until = w.until,
            reason = scrub(&w.reason),
        ),
    }
}

/// One store's status: printed as text, or returned as one JSON object with `json`.
fn report(
    cfg: &cmautobuy_client::config::Config,
    store: &cmautobuy_client::store::Store,
    json: bool,
) -> Result<Option<serde_json::Value>, Failure> {
    let s = store.settings()?;
    let alerts = store.open_alerts()?;
    let pause = store.device_pause()?;
    let live_cap = store.live_cap()?;
    let claim_wait = store.claim_wait()?;
    let clock_skew = store.clock_skew()?;
    let version_hold = store.pdd_version_hold()?;
    let versions = store.pdd_versions()?;
    let account_refusal = store.account_refusal()?;
    let self_test_note = store.self_test_note()?;
    let self_tests = store.self_tests()?;
    let account = match s.device.as_deref() {
        Some(d) => store.account_fingerprint(d)?,
        None => None,
    };
    let summary = store.summary()?;
    let undelivered: Vec<_> = store.outbox_list(false)?;
    // Orders placed whose phone went away before they were read back (or a crash there):
    // reconciled when the phone answers, never submitted again.
    let awaiting = store.awaiting_reconcile()?;
    // The fingerprint in force: the console's (设置 page) over the configuration's.
    let expected_address = store
        .operator_settings()?
        .expected_address_or(&cfg.expected_address);
    if json {
        let v = serde_json::json!({
            "client_id": s.client_id,
            "name": s.name,
            "admin_url": s.admin_url,
            "token_set": s.token.is_some(),
            "device": s.device,
            "registration": s.registration,
            "device_pause": pause,
            "awaiting_reconcile": awaiting,
            "expected_address": expected_address,
            "live_cap": live_cap,
            "claim_wait": claim_wait,
            "clock_skew": clock_skew,
            "pdd_version_hold": version_hold,
            "pdd_versions": versions.iter().map(|v| serde_json::json!({
                "device": v.device, "version": v.version, "first_seen": v.first_seen,
                "proven_at": v.proven_at, "proven_by": v.proven_by,
            })).collect::<Vec<_>>(),
            "account_refusal": account_refusal,
            "self_test_note": self_test_note,
            "self_tests": self_tests.iter().map(|t| serde_json::json!({
                "device": t.device, "pdd_version": t.pdd_version, "started_at": t.started_at,
                "finished_at": t.finished_at, "outcome": t.outcome, "code": t.code,
                "message": t.message, "failures": t.failures, "attempt_id": t.attempt_id,
            })).collect::<Vec<_>>(),
            "account": account.as_ref().map(|f| serde_json::json!({
                "nickname": f.baseline.nickname, "masked_phone": f.baseline.masked_phone,
                "first_seen": f.first_seen, "last_checked": f.last_checked,
                "pending": f.pending.as_ref().map(|(r, seen)| serde_json::json!({
                    "nickname": r.nickname, "masked_phone": r.masked_phone, "first_seen": seen,
                })),
            })),
            "alerts": alerts.iter().map(|a| serde_json::json!({
                "id": a.id, "kind": a.kind, "task_id": a.remote_task_id,
                "message": a.message, "raised_at": a.raised_at,
            })).collect::<Vec<_>>(),
            "tasks": summary.tasks.iter().map(|(k, n)| (k.as_str().to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
            "outbox": summary.outbox.iter().map(|(k, n)| (k.as_str().to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
            "webhooks": store.webhook_counts()?.into_iter().map(|(k, n)| (k, serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        });
        return Ok(Some(v));
    }
    println!("client id:    {}", s.client_id);
    println!("name:         {}", s.name.as_deref().unwrap_or("-"));
    println!("admin:        {}", s.admin_url.as_deref().unwrap_or("-"));
    println!(
        "token:        {}",
        if s.token.is_some() { "set" } else { "not set" }
    );
    println!("device:       {}", s.device.as_deref().unwrap_or("-"));
    if expected_address.is_empty() {
        println!(
            "LIVE OFF: 没有收货地址指纹，不做真实下单 / {} (the address read is still reported as `delivery_address`)",
            cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT
        );
    } else {
        println!("address:      must show {}", expected_address.join(" + "));
    }
    if let Some(p) = &pause {
        println!(
            "PAUSED for the phone since {}: [{}] {} (no claims; resumes by itself when the phone answers)",
            local(&p.since), p.code, p.message
        );
    }
    for r in &awaiting {
        println!(
            "ORDER PLACED on {} (task {}, attempt {}, submitted {}), waiting for the phone to reconcile it (never submitted again)",
            s.device.as_deref().unwrap_or("the phone"),
            r.remote_task_id,
            r.attempt_id,
            local(&r.marked_at)
        );
    }
    if let Some(why) = &clock_skew {
        println!("LIVE REFUSED for clock skew: {why}; declaring dry_run (collects and dry runs continue)");
    }
    if let Some(why) = &version_hold {
        println!("{why}; declaring dry_run (collects and dry runs continue) until a dry-run purchase succeeds on it, or `cmautobuy-client ack N` of its alert after you checked it by hand");
    }
    for v in versions.iter().take(5) {
        match (&v.proven_at, &v.proven_by) {
            (Some(at), by) => println!(
                "pdd version: {} on {} proven {} by {} (first seen {})",
                v.version,
                v.device,
                local(at),
                by.as_deref().unwrap_or("-"),
                local(&v.first_seen)
            ),
            (None, _) => println!(
                "pdd version: {} on {} NOT proven (first seen {})",
                v.version,
                v.device,
                local(&v.first_seen)
            ),
        }
    }
    if let Some(why) = &self_test_note {
        println!("live paused: {why}; declaring dry_run (collects and dry runs continue)");
    }
    for t in self_tests.iter().take(3) {
        println!(
            "self-test:    {} on {} PDD {}: {} (started {}{}; attempt {})",
            t.outcome.as_deref().unwrap_or("running or cut short"),
            t.device,
            t.pdd_version,
            match (&t.code, &t.message) {
                (Some(c), Some(m)) => format!("[{c}] {m}"),
                _ => "-".into(),
            },
            local(&t.started_at),
            t.finished_at
                .as_deref()
                .map(|f| format!(", finished {}", local(f)))
                .unwrap_or_default(),
            t.attempt_id
        );
    }
    if let Some(f) = &account {
        println!(
            "account:      {} (first seen {}, last checked {})",
            f.baseline.describe(),
            local(&f.first_seen),
            local(&f.last_checked)
        );
    }
    for a in alerts
        .iter()
        .filter(|a| a.kind == AlertKind::AccountChanged)
    {
        println!(
            "live paused: account changed on this phone ({}); collects and dry runs continue. Run `cmautobuy-client ack {}` to accept the new account as this phone's",
            a.message, a.id
        );
    }
    if let Some(why) = account_refusal
        .as_deref()
        .filter(|_| !alerts.iter().any(|a| a.kind == AlertKind::AccountChanged))
    {
        println!("live paused: {why}; declaring dry_run until an account check succeeds (collects and dry runs continue)");
    }
    if let Some(c) = &live_cap {
        // HH:MM in the machine's time zone (what the operator's clock shows), then UTC.
        let local = chrono::DateTime::parse_from_rfc3339(&c.until)
            .map(|t| t.with_timezone(&chrono::Local).format("%H:%M").to_string())
            .unwrap_or_else(|_| c.until.clone());
        println!(
            "live capped until {local} ({}): {}; declaring dry_run (collects and dry runs continue)",
            c.until, c.reason
        );
    }
    if let Some(w) = &claim_wait {
        println!("{}", claim_wait_line(w));
    }
    for a in alerts.iter().filter(|a| a.kind == AlertKind::AccountPaused) {
        println!(
            "PAUSED for the account (task {}) since {}, run `cmautobuy-client ack {}` once a human has dealt with the phone",
            a.remote_task_id.as_deref().unwrap_or("-"),
            local(&a.raised_at),
            a.id
        );
    }
    for a in alerts
        .iter()
        .filter(|a| a.kind == AlertKind::DeviceAttention)
    {
        println!(
            "PHONE NEEDS A HUMAN since {}: {} (closes by itself once the phone passes a check)",
            local(&a.raised_at),
            a.message
        );
    }
    match &s.registration {
        Some(r) if r.state == "ok" => println!("registration: ok ({})", local(&r.at)),
        Some(r) => println!(
            "registration: {} ({}){}",
            r.state,
            local(&r.at),
            r.error
                .as_deref()
                .map(|e| format!(": {}", scrub(e)))
                .unwrap_or_default()
        ),
        None => println!("registration: never attempted"),
    }
    if alerts.is_empty() {
        println!(
            "alerts:       none{}",
            if pause.is_some() {
                ""
            } else {
                " (claiming allowed)"
            }
        );
    } else {
        let stops = alerts.iter().any(|a| a.kind.blocks_claims());
        if stops {
            println!("ALERTS — claiming is stopped until acknowledged (`cmautobuy-client ack`):");
        } else {
            println!("ALERTS — for the operator (claiming continues; `cmautobuy-client ack` closes them):");
        }
        for a in &alerts {
            println!(
                "  #{} [{}] task {} ({}): {}",
                a.id,
                a.kind,
                a.remote_task_id.as_deref().unwrap_or("-"),
                local(&a.raised_at),
                scrub(&a.message)
            );
        }
    }
    let fmt = |v: Vec<(String, i64)>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|(k, n)| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    println!(
        "tasks:        {}",
        fmt(summary
            .tasks
            .iter()
            .map(|(k, n)| (k.as_str().into(), *n))
            .collect())
    );
    // Tasks in flight (claimed, running, or waiting for the Admin's acceptance).
    for t in store.unfinished_tasks()? {
        println!(
            "  task {} ({}, {}) {} since {}",
            t.remote_task_id,
            t.task_type,
            t.execution_mode,
            t.state.as_str(),
            local(&t.claimed_at)
        );
    }
    let recent = store.recent_outcomes(RECENT)?;
    if !recent.is_empty() {
        println!("recent outcomes 最近结果 (newest first; reason — next step 原因 — 下一步):");
        for o in &recent {
            println!("{}", outcome_lines(o));
        }
    }
    println!(
        "outbox:       {}",
        fmt(summary
            .outbox
            .iter()
            .map(|(k, n)| (k.as_str().into(), *n))
            .collect())
    );
    for o in undelivered {
        println!(
            "  #{} {} {} task {} attempts {}{}",
            o.id,
            o.state.as_str(),
            o.kind.as_str(),
            o.remote_task_id,
            o.attempts,
            o.last_error
                .map(|e| format!(" last error: {e}"))
                .unwrap_or_default()
        );
    }
    // Alerts out: the webhook queue, when anything was ever queued.
    let hooks = store.webhook_counts()?;
    if !hooks.is_empty() {
        println!("webhooks:     {}", fmt(hooks));
    }
    Ok(None)
}
