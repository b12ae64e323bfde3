//! `doctor`'s whole-host report: every check as `{name, ok, detail,
//! fix}` — the adb server, the phone ([`crate::device::doctor`] does the reading), the
//! Admin (reachable, token accepted, clock skew), the data directory (writable, free
//! space, the store's schema) — and the **live readiness verdict**, whose inputs meet in
//! one pure function, [`live_blockers`].
//!
//! The exit code follows the checks (every one passes: 0, else 6); the live verdict is
//! reported beside them and does not change it: a fresh installation is ready to work
//! (collects, dry runs) before it may declare `live` (contract §5: only once proven).
//!
//! [`run`] runs the checks. Every host and Admin check runs whether or not a phone is
//! configured or answers, and nothing of what `doctor` is given (`--admin`, `--token`,
//! `--device`) is saved: it checks the settings a run would use, and changes none.

pub mod run;

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::device::backend::BackendProbe;
use crate::device::doctor::DoctorReport;
use crate::device::state::{Keyguard, ScreenPower};

/// One check: what was looked at, whether it passed, what was found and — when it failed
/// — the one concrete thing to do about it (a command or a setting).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    pub fn pass(name: &str, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// What decides whether this client may declare `live` now, besides the checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveInputs {
    /// `purchase_mode = dry_run`: never live.
    pub dry_run_only: bool,
    /// Why the identity is not valid for live (no client id, no Admin URL or token
    /// saved, the Admin rejected the registration, a name over 50 characters).
    pub identity: Option<String>,
    /// Open operator alerts that stop claiming (`kind: message`).
    pub blocking_alerts: Vec<String>,
    /// No address fingerprint configured (`expected_address`): live is never declared
    /// without one, whatever else holds — reported beside any other refusal, never hidden
    /// by it.
    pub address_fingerprint: Option<String>,
    /// Why the store says a claim would not declare live (the self-test on the current
    /// PDD version, the PDD-version gate, clock skew, the account check, a live cap).
    pub store_refusal: Option<String>,
}

/// Every reason live is blocked (empty: live ready). A failed check blocks it (by name);
/// then the inputs, in a fixed order.
pub fn live_blockers(checks: &[Check], i: &LiveInputs) -> Vec<String> {
    let mut why: Vec<String> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| format!("{} check failed", c.name))
        .collect();
    if i.dry_run_only {
        why.push("purchase_mode = dry_run".into());
    }
    if let Some(w) = &i.identity {
        why.push(w.clone());
    }
    for a in &i.blocking_alerts {
        why.push(format!(
            "open alert {a} (`cmautobuy-client ack` once handled)"
        ));
    }
    for w in [&i.address_fingerprint, &i.store_refusal]
        .into_iter()
        .flatten()
    {
        if !why.iter().any(|x| x == w) {
            why.push(w.clone());
        }
    }
    why
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Every check passed (exit 0).
    pub ready: bool,
    pub checks: Vec<Check>,
    pub live: LiveVerdict,
    /// The phone's details as read (model, versions, screen, …), when a phone was read.
    pub device: Option<DoctorReport>,
    /// The device backend in use, the server's version and one timed dump.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_backend: Option<BackendProbe>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LiveVerdict {
    pub ready: bool,
    pub reasons: Vec<String>,
}

impl Report {
    pub fn new(checks: Vec<Check>, live: &LiveInputs, device: Option<DoctorReport>) -> Report {
        let reasons = live_blockers(&checks, live);
        Report {
            ready: checks.iter().all(|c| c.ok),
            live: LiveVerdict {
                ready: reasons.is_empty(),
                reasons,
            },
            checks,
            device,
            device_backend: None,
        }
    }

    /// The backend probe's details beside its check (`--json`: `device_backend`).
    pub fn with_backend(mut self, probe: Option<BackendProbe>) -> Report {
        self.device_backend = probe;
        self
    }

    /// One line a check (`ok` / `FAIL`), its fix under a failed one, then the verdicts.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for c in &self.checks {
            s.push_str(&format!(
                "{:<4} {:<12} {}\n",
                if c.ok { "ok" } else { "FAIL" },
                c.name,
                c.detail
            ));
            if let Some(f) = &c.fix {
                s.push_str(&format!("     {:<12} fix: {f}\n", ""));
            }
        }
        s.push_str(if self.ready {
            "ready: yes\n"
        } else {
            "ready: NO\n"
        });
        if self.live.ready {
            s.push_str("live ready: yes\n");
        } else {
            s.push_str(&format!(
                "live ready: no — {}\n",
                self.live.reasons.join("; ")
            ));
        }
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// One phone's section of a several-phones report.
#[derive(Clone, Debug, Serialize)]
pub struct PhoneSection {
    /// The serial as given (`--device`, `devices`).
    pub device: String,
    pub checks: Vec<Check>,
    /// Blocked also by a failed host check.
    pub live: LiveVerdict,
    /// The phone's details as read.
    pub details: Option<DoctorReport>,
}

impl PhoneSection {
    pub fn new(
        device: String,
        host: &[Check],
        checks: Vec<Check>,
        live: &LiveInputs,
        details: Option<DoctorReport>,
    ) -> PhoneSection {
        let all: Vec<Check> = host.iter().chain(checks.iter()).cloned().collect();
        let reasons = live_blockers(&all, live);
        PhoneSection {
            device,
            checks,
            live: LiveVerdict {
                ready: reasons.is_empty(),
                reasons,
            },
            details,
        }
    }
}

/// `doctor` with several phones: the host's checks once, then one section a phone.
#[derive(Clone, Debug, Serialize)]
pub struct SeveralReport {
    /// Every check of the host and of every phone passed (exit 0).
    pub ready: bool,
    pub checks: Vec<Check>,
    pub phones: Vec<PhoneSection>,
}

impl SeveralReport {
    pub fn new(checks: Vec<Check>, phones: Vec<PhoneSection>) -> SeveralReport {
        let ready =
            checks.iter().all(|c| c.ok) && phones.iter().all(|p| p.checks.iter().all(|c| c.ok));
        SeveralReport {
            ready,
            checks,
            phones,
        }
    }

    /// The host's checks, then `phone SERIAL:` and its checks and live verdict, a phone
    /// at a time; `ready:` last.
    pub fn render_text(&self) -> String {
        let mut s = render_checks(&self.checks);
        for p in &self.phones {
            s.push_str(&format!("\nphone {}:\n", p.device));
            s.push_str(&render_checks(&p.checks));
            s.push_str(&render_live(&p.live));
        }
        s.push_str(if self.ready {
            "\nready: yes\n"
        } else {
            "\nready: NO\n"
        });
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

fn render_checks(checks: &[Check]) -> String {
    let mut s = String::new();
    for c in checks {
        s.push_str(&format!(
            "{:<4} {:<12} {}\n",
            if c.ok { "ok" } else { "FAIL" },
            c.name,
            c.detail
        ));
        if let Some(f) = &c.fix {
            s.push_str(&format!("     {:<12} fix: {f}\n", ""));
        }
    }
    s
}

fn render_live(live: &LiveVerdict) -> String {
    if live.ready {
        "live ready: yes\n".into()
    } else {
        format!("live ready: no — {}\n", live.reasons.join("; "))
    }
}

/// The phone's checks from what [`crate::device::doctor::check_with`] read: `device`
/// (listed, online, authorized), then — only when it answered — `phone` (model, Android,
/// screen size), `screen` (on, unlocked, battery), `pdd` (installed, version), `input`
/// (injection allowed); a problem none of those names becomes `device_commands`.
pub fn device_checks(r: &DoctorReport) -> Vec<Check> {
    let problem = |codes: &[&str]| r.problems.iter().find(|p| codes.contains(&p.code.as_str()));
    let mut out = Vec::new();
    if r.state != "device" {
        let first = r.problems.first();
        let detail = format!(
            "{} ({}): {}{}",
            r.device,
            r.transport,
            r.state,
            first
                .map(|p| format!(" — {}", p.message))
                .unwrap_or_default()
        );
        let fix = match (r.state.as_str(), r.transport.as_str()) {
            ("unauthorized", _) => "accept the USB debugging (RSA key) prompt on the phone, tick \"always allow\", then run doctor again".to_string(),
            ("not found", _) => "connect the phone (USB cable, or `adb connect HOST:PORT` for Wi-Fi debugging) until `adb devices` lists it as `device`".to_string(),
            ("adb server unreachable", _) => "start the adb server: `adb start-server` (or give its address with --adb-server HOST:PORT)".to_string(),
            (_, "tcp") => format!("nothing answers at {}: switch the phone on, turn on Wi-Fi/wireless debugging (same network) and check the address and port", r.device.trim_start_matches("tcp:")),
            _ => "reconnect the phone (replug the cable or `adb connect HOST:PORT`; `adb kill-server` if it stays offline) until `adb devices` shows it as `device`".to_string(),
        };
        out.push(Check::fail("device", detail, fix));
        return out;
    }
    out.push(Check::pass(
        "device",
        format!("{} ({}): online, authorized", r.device, r.transport),
    ));
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let size = match (r.screen_width, r.screen_height) {
        (Some(w), Some(h)) => format!("{w}x{h}"),
        _ => "size unknown".into(),
    };
    let phone = format!(
        "model {}, Android {}, screen {size}",
        opt(&r.model),
        opt(&r.android_version)
    );
    out.push(match problem(&["SCREEN_SIZE_UNKNOWN"]) {
        Some(p) => Check::fail(
            "phone",
            format!("{phone}: {}", p.message),
            "check that `adb shell wm size` prints `Physical size: WxH` (reboot the phone if it does not)",
        ),
        None => Check::pass("phone", phone),
    });

    let screen = match r.screen {
        Some(ScreenPower::On) => "on",
        Some(ScreenPower::Off) => "off (woken before each task)",
        _ => "unknown",
    };
    let lock = match r.lock {
        Some(Keyguard::Unlocked) => "unlocked",
        Some(Keyguard::Swipe) => "swipe lock (swiped away before each task)",
        Some(Keyguard::Secure) => "PIN / pattern lock",
        _ => "lock unknown",
    };
    let battery = r
        .battery
        .and_then(|b| b.percent.map(|p| format!(", battery {p}%")))
        .unwrap_or_default();
    let screen_detail = format!("screen {screen}, {lock}{battery}");
    out.push(
        match problem(&["DEVICE_LOCKED", "BATTERY_LOW", "BATTERY_HOT"]) {
            Some(p) => {
                let fix = match p.code.as_str() {
                    "DEVICE_LOCKED" => "set the screen lock to None or Swipe (Settings → Security / 锁屏), then unlock the phone",
                    "BATTERY_LOW" => "plug the phone into a charger (or lower battery_min_percent in the config)",
                    _ => "let the phone cool down (out of the sun, off the charger stack, case off)",
                };
                Check::fail("screen", format!("{screen_detail}: {}", p.message), fix)
            }
            None => Check::pass("screen", screen_detail),
        },
    );

    out.push(match (r.pdd_installed, &r.pdd_version) {
        (Some(true), Some(v)) => Check::pass("pdd", format!("installed, version {v}")),
        (Some(true), None) => Check::pass("pdd", "installed (version not printed)"),
        (Some(false), _) => Check::fail(
            "pdd",
            format!("{} is not installed", crate::screen::PDD_PACKAGE),
            "install 拼多多 (com.xunmeng.pinduoduo) from the app store and log in to the shop's account",
        ),
        (None, _) => Check::fail(
            "pdd",
            "could not list the packages",
            "check that `adb shell pm list packages com.xunmeng.pinduoduo` answers",
        ),
    });

    out.push(match r.input_injection {
        Some(true) => Check::pass("input", "injected input accepted"),
        Some(false) => Check::fail(
            "input",
            "the phone refuses injected input (INJECT_EVENTS)",
            "turn on 开发者选项 → USB调试（安全设置） (MIUI / HyperOS: \"USB debugging (Security settings)\"), then run doctor again",
        ),
        None => Check::fail(
            "input",
            "not probed (an earlier command failed)",
            "reconnect the phone and run doctor again",
        ),
    });

    const NAMED: &[&str] = &[
        "SCREEN_SIZE_UNKNOWN",
        "DEVICE_LOCKED",
        "BATTERY_LOW",
        "BATTERY_HOT",
        "PDD_NOT_INSTALLED",
        "INPUT_INJECTION_DENIED",
    ];
    let other: Vec<String> = r
        .problems
        .iter()
        .filter(|p| !NAMED.contains(&p.code.as_str()))
        .map(|p| format!("[{}] {}", p.code, p.message))
        .collect();
    if !other.is_empty() {
        out.push(Check::fail(
            "device_commands",
            other.join("; "),
            "reconnect the phone (replug the cable or `adb connect HOST:PORT`; `adb kill-server` if it persists) and run doctor again",
        ));
    }
    out
}

/// The data directory takes a file: creates it (and the directory), writes, `fsync`s and
/// removes a probe file.
/// `backend`: `u2 (server 0.4.1, dump 320 ms)` or `uiautomator (u2
/// unavailable: <reason>)`; fails when the timed dump failed (with `device_backend =
/// "u2"`, a server that does not start).
pub fn backend_check(p: &BackendProbe) -> Check {
    let dump = p
        .dump_ms
        .map(|ms| format!("dump {ms} ms"))
        .unwrap_or_else(|| "no dump".into());
    let detail = if p.backend == "u2" {
        format!(
            "u2 (server {}, {dump}; started with the first dump in {} ms)",
            p.server_version.as_deref().unwrap_or("version unknown"),
            p.start_ms.unwrap_or(0)
        )
    } else {
        format!(
            "uiautomator ({}{dump})",
            p.u2_unavailable
                .as_ref()
                .map(|w| format!("u2 unavailable: {w}; "))
                .unwrap_or_default()
        )
    };
    match &p.error {
        None => Check::pass("backend", detail),
        Some(e) => Check::fail(
            "backend",
            format!("{detail}: the dump failed: {e}"),
            if p.configured == "u2" {
                "put u2.jar beside the binary (the release folder has it) or set u2_jar, \
                 or choose device_backend = \"auto\"; the phone must be reached through the \
                 adb server"
            } else {
                "fix the phone checks above, then run doctor again"
            },
        ),
    }
}

pub fn data_dir_check(dir: &Path) -> Check {
    let probe = dir.join(".doctor-probe");
    let r = (|| -> std::io::Result<()> {
        crate::file_modes::create_dir(dir).map(drop)?;
        let mut f = std::fs::File::create(&probe)?;
        f.write_all(b"doctor\n")?;
        f.sync_all()?;
        drop(f);
        std::fs::remove_file(&probe)
    })();
    match r {
        Ok(()) => Check::pass("data_dir", format!("{} writable", dir.display())),
        Err(e) => {
            let _ = std::fs::remove_file(&probe);
            Check::fail(
                "data_dir",
                format!("{}: {e}", dir.display()),
                format!(
                    "make {} writable by this user (or choose another with --data-dir DIR / data_dir)",
                    dir.display()
                ),
            )
        }
    }
}

/// Free space on the data directory's filesystem against the `min_free_disk_mb` floor
/// (`free`: `None` when unknown — then it passes with a note).
pub fn disk_check(dir: &Path, free: Option<u64>, min: u64) -> Check {
    const MB: u64 = 1024 * 1024;
    match free {
        None => Check::pass("disk", "free space unknown on this system"),
        Some(f) if f >= min => Check::pass(
            "disk",
            format!("{} MB free (floor {} MB)", f / MB, min / MB),
        ),
        Some(f) => Check::fail(
            "disk",
            format!(
                "{} MB free on {}, below the floor of {} MB: no claims",
                f / MB,
                dir.display(),
                min / MB
            ),
            "free space on that disk (old artifacts, logs) or lower min_free_disk_mb in the config",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_lists_every_reason_and_failed_checks_block_live() {
        let checks = vec![
            Check::pass("device", "ok"),
            Check::fail("token", "rejected", "give the token"),
        ];
        let i = LiveInputs {
            dry_run_only: false,
            identity: Some("no token saved".into()),
            blocking_alerts: vec!["protocol_error: x".into()],
            address_fingerprint: Some("no address fingerprint".into()),
            store_refusal: Some("no self-test yet".into()),
        };
        assert_eq!(
            live_blockers(&checks, &i),
            [
                "token check failed",
                "no token saved",
                "open alert protocol_error: x (`cmautobuy-client ack` once handled)",
                "no address fingerprint",
                "no self-test yet"
            ]
        );
        // The store says the same about the fingerprint: once.
        let same = LiveInputs {
            store_refusal: Some("no address fingerprint".into()),
            ..i.clone()
        };
        assert_eq!(
            live_blockers(&[], &same)
                .iter()
                .filter(|w| *w == "no address fingerprint")
                .count(),
            1
        );
        let r = Report::new(checks, &i, None);
        assert!(!r.ready && !r.live.ready);
        let text = r.render_text();
        assert!(text.contains("FAIL token"), "{text}");
        assert!(text.contains("fix: give the token"), "{text}");
        assert!(
            text.contains("live ready: no — token check failed; "),
            "{text}"
        );
        let ok = Report::new(
            vec![Check::pass("device", "ok")],
            &LiveInputs::default(),
            None,
        );
        assert!(ok.ready && ok.live.ready);
        assert!(ok.render_text().ends_with("ready: yes\nlive ready: yes\n"));
        let j = ok.to_json();
        assert_eq!(j["checks"][0]["name"], "device");
        assert_eq!(j["live"]["ready"], true);
    }

    #[test]
    fn data_dir_and_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new");
        assert!(data_dir_check(&dir).ok);
        assert!(!dir.join(".doctor-probe").exists());
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let c = data_dir_check(&file.join("sub"));
        assert!(!c.ok && c.fix.is_some(), "{c:?}");
        assert!(disk_check(&dir, Some(600 << 20), 500 << 20).ok);
        let c = disk_check(&dir, Some(100 << 20), 500 << 20);
        assert!(!c.ok && c.detail.contains("100 MB free"), "{c:?}");
        assert!(disk_check(&dir, None, 500 << 20).ok);
    }
}
