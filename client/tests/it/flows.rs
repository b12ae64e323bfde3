//! Flow tests driven by data, in the manner of `screens.rs`: every directory under
//! `fixtures/flows/` is one case — a sequence of recorded dumps in, the action trace and
//! the outcome out — checked by one [`check`] helper. A new real-phone case is a new
//! directory, not new code.
//!
//! A case directory holds:
//! - `case.json` — which machine (`collect`, `purchase`, `reconcile`, `account`), its task, the
//!   dumps the phone answers in order (paths from the repo root; the last one repeats
//!   when the flow asks for more), what `dumpsys activity top` prints (the same way),
//!   optional scripted device errors, the answers to effects, and `why`: what the case
//!   proves. Fields: `fixtures/flows/README.md`.
//! - `expected.txt` — the rendered result: one line per trace entry
//!   (`kind step detail`, observe and read_goods_id lines with the file that answered
//!   them), then
//!   `outcome: …`, then `stats: …`.
//!
//! **Updating the expectations** (rust-analyzer's expect-test habit): run
//! `UPDATE_EXPECT=1 cargo test -p cmautobuy-client --test it flows::`; every `expected.txt`
//! is rewritten from what the flows do now. Review the diff (`git diff fixtures/flows`)
//! before committing: the files are the assertion.
//!
//! **Real dumps.** A case may name dumps beside the repository, under `../shared/` (the
//! real PDD dumps of `../shared/pdd-real-dumps/`, never copied here). When such a dump is
//! missing the case fails — unless its directory is absent and `CMAUTOBUY_NO_SHARED=1`
//! (set by `scripts/test` when the shared material is missing) accepts that: then the
//! case is reported NOT CHECKED, loudly, as `screens.rs` does for the real dumps.
//!
//! The flows run on the driver (`job::driver::drive`) behind the device guard (the one
//! submit allowed to live purchases only) with a scripted phone, scripted effects and the
//! driver's virtual clock; no artifacts are written. The scripted
//! phone's code that knows the device trait is one marked block ([`ScriptedDevice`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, TimeZone, Utc};
use cmautobuy_contract::{
    Fen, OptionMap, PddData, PurchaseResult, SpecResolutionRequest, SpecResolutionResponse,
};
use serde::Deserialize;

use cmautobuy_client::flow::account::{AccountFlow, AccountLimits};
use cmautobuy_client::flow::collect::{CollectFlow, CollectLimits, CollectTask};
use cmautobuy_client::flow::purchase::task::{PurchaseLimits, PurchaseTask};
use cmautobuy_client::flow::purchase::PurchaseFlow;
use cmautobuy_client::flow::reconcile::{ReconcileContext, ReconcileFlow, ReconcileLimits};
use cmautobuy_client::flow::{Confirmation, Effect, EffectOutcome, Flow, FlowFailure, FlowOutcome};
use cmautobuy_client::job::driver::{DriveReport, Effects};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("client/ has a parent")
        .to_path_buf()
}

fn cases_dir() -> PathBuf {
    repo_root().join("fixtures/flows")
}

/// Dumps named from here live beside the repository, not in it.
const SHARED_PREFIX: &str = "../shared/";

/// `CMAUTOBUY_NO_SHARED=1`: running without the shared material is accepted.
fn no_shared_accepted() -> bool {
    std::env::var("CMAUTOBUY_NO_SHARED").as_deref() == Ok("1")
}

/// Why a case that names a missing shared dump is not checked, when that is `accepted`
/// (`None`: the dumps are there, or their absence is a failure).
fn shared_not_checked(case: &Case, accepted: bool) -> Option<String> {
    let missing: Vec<&str> = case
        .dumps
        .iter()
        .map(DumpSpec::path)
        .filter(|p| p.starts_with(SHARED_PREFIX))
        .filter(|p| {
            let path = repo_root().join(p);
            !path.is_file() && path.parent().is_some_and(|d| !d.is_dir())
        })
        .collect();
    if missing.is_empty() || !accepted {
        return None;
    }
    let dirs: std::collections::BTreeSet<String> = missing
        .iter()
        .filter_map(|p| {
            repo_root()
                .join(p)
                .parent()
                .map(|d| d.display().to_string())
        })
        .collect();
    Some(format!(
        "{} missing (CMAUTOBUY_NO_SHARED=1)",
        dirs.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

// ---------------------------------------------------------------------------------------
// case.json
// ---------------------------------------------------------------------------------------

/// The top-level keys of `case.json`.
const CASE_KEYS: &[&str] = &[
    "why",
    "start",
    "machine",
    "task",
    "dumps",
    "activity_top",
    "device_errors",
    "effects",
    "max_actions",
];

// No `deny_unknown_fields` here: serde does not support it with `flatten` (checked by
// hand against CASE_KEYS instead).
#[derive(Debug, Deserialize)]
struct Case {
    /// What the case proves (for the reader; not checked).
    #[allow(dead_code)]
    why: String,
    /// The virtual clock's start (RFC 3339); default 2026-11-30T08:00:00Z.
    #[serde(default)]
    start: Option<DateTime<Utc>>,
    #[serde(flatten)]
    machine: Machine,
    /// The dumps the phone answers, in order (paths from the repo root).
    dumps: Vec<DumpSpec>,
    /// What `dumpsys activity top` prints, in order (paths from the repo root; the last
    /// one repeats); none: it prints nothing (no goods id observable).
    #[serde(default)]
    activity_top: Vec<String>,
    #[serde(default)]
    device_errors: Vec<ScriptedError>,
    #[serde(default)]
    effects: EffectAnswers,
    /// The driver's bound on the flow's actions (its safety net, `DriveLimits::max_actions`):
    /// past it the flow is aborted. Default: the driver's.
    #[serde(default)]
    max_actions: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "machine", content = "task", rename_all = "snake_case")]
enum Machine {
    Collect(CollectCase),
    Purchase(PurchaseCase),
    Reconcile(Box<ReconcileCase>),
    /// The account check between tasks (`flow::account`); its task is `{}`.
    Account(AccountCase),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountCase {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectCase {
    goods_id: String,
    #[serde(default)]
    expected_title: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PurchaseCase {
    goods_id: String,
    #[serde(default)]
    expected_title: Option<String>,
    /// Dimension key → option, in the task's order.
    options: OptionMap,
    quantity: u32,
    max_price_cent: i64,
    #[serde(default)]
    live: bool,
    /// The phone's delivery-address fingerprint (`expected_address`).
    #[serde(default)]
    expected_address: Vec<String>,
    #[serde(default = "default_task_id")]
    remote_task_id: String,
    #[serde(default = "default_attempt_id")]
    attempt_id: String,
    #[serde(default = "default_task_version")]
    task_version: i64,
    /// What the reconcile phase knows besides the confirmation.
    #[serde(flatten)]
    context: ContextCase,
}

/// `known_orders` (order numbers reported for other tasks) and `clock_skew_ms` (the
/// measured host ↔ phone skew), both optional (none, 0).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextCase {
    #[serde(default)]
    known_orders: Vec<String>,
    #[serde(default)]
    clock_skew_ms: u64,
}

impl ContextCase {
    fn context(self) -> ReconcileContext {
        ReconcileContext {
            known_orders: self.known_orders.into_iter().collect(),
            clock_skew: std::time::Duration::from_millis(self.clock_skew_ms),
        }
    }
}

fn default_task_id() -> String {
    "task-1".into()
}
fn default_attempt_id() -> String {
    "attempt-1".into()
}
fn default_task_version() -> i64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReconcileCase {
    confirmation: Confirmation,
    /// The irreversible mark (the local submit time).
    submitted_at: DateTime<Utc>,
    /// Crash recovery: nothing found is `INTERRUPTED_AFTER_SUBMIT`.
    #[serde(default)]
    recovery: bool,
    #[serde(flatten)]
    context: ContextCase,
}

/// One dump of `dumps`: a path from the repo root, or a path with edits applied when it
/// is read — for a real dump that lacks one thing the flow needs before the part a case
/// is about (the file itself is never copied or changed).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DumpSpec {
    Path(String),
    Edited(EditedDump),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditedDump {
    path: String,
    /// `[from, to]` pairs: each `from` must occur exactly once in the dump.
    replace: Vec<[String; 2]>,
}

impl DumpSpec {
    fn path(&self) -> &str {
        match self {
            DumpSpec::Path(p) => p,
            DumpSpec::Edited(e) => &e.path,
        }
    }
}

/// A dump call that fails instead of answering the next dump (which then answers the
/// following call).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedError {
    /// The dump call (0-based, every dump the flow asks for counts).
    at: usize,
    message: String,
    #[serde(default = "yes")]
    retryable: bool,
    /// Set: the phone answered but the dump is unusable (this code), not a device error.
    #[serde(default)]
    dump_code: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EffectAnswers {
    /// The answer to `MarkIrreversible`.
    #[serde(default)]
    mark: Option<Answer>,
    /// The answer to `ResolveSpec`: a §7.1 response, or another [`Answer`].
    #[serde(default)]
    resolve_spec: Option<SpecAnswer>,
    /// The answer to `NoteProceed` (the note before a spec sheet's 确定); `"noted"` when
    /// absent.
    #[serde(default)]
    note_proceed: Option<Answer>,
}

/// `"marked"` (at the case's start time) | `"noted"` | `{"refused": "reason"}` |
/// `{"failed": "message"}` (retryable).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Marked,
    Noted,
    Refused(String),
    Failed(String),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum SpecAnswer {
    Response(Box<SpecResolutionResponse>),
    Other(Answer),
}

// ---------------------------------------------------------------------------------------
// The script: which dump (or error) answers each dump call. Knows nothing of the device
// trait.
// ---------------------------------------------------------------------------------------

/// A dump the script answers: its name (for the rendering) and its raw text.
struct Dump {
    name: String,
    text: String,
}

struct Script {
    dumps: Vec<Dump>,
    /// The `dumpsys activity top` outputs (name, text).
    tops: Vec<Dump>,
    errors: BTreeMap<usize, ScriptedError>,
    log: Mutex<Served>,
}

/// What answered each dump call so far (names), and the next dump to answer.
#[derive(Default)]
struct Served {
    names: Vec<String>,
    next: usize,
    /// What answered each `dumpsys activity top` call so far.
    tops: Vec<String>,
}

impl Script {
    fn load(case: &Case) -> Result<Script, String> {
        if case.dumps.is_empty() {
            return Err("`dumps` is empty".into());
        }
        let mut dumps = Vec::new();
        for spec in &case.dumps {
            let p = spec.path();
            let bytes = std::fs::read(repo_root().join(p)).map_err(|e| {
                let hint = if p.starts_with(SHARED_PREFIX) {
                    " (a real dump beside the repository: put the shared material there, \
                     or set CMAUTOBUY_NO_SHARED=1 to accept running without it)"
                } else {
                    ""
                };
                format!("dump {p}: {e}{hint}")
            })?;
            let mut name = Path::new(p)
                .file_name()
                .map_or(p.to_string(), |n| n.to_string_lossy().into_owned());
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if let DumpSpec::Edited(e) = spec {
                for [from, to] in &e.replace {
                    let n = text.matches(from.as_str()).count();
                    if n != 1 {
                        return Err(format!(
                            "dump {p}: `{from}` occurs {n} times; an edit must replace exactly one"
                        ));
                    }
                    text = text.replacen(from.as_str(), to, 1);
                }
                name.push_str(" (edited)");
            }
            dumps.push(Dump { name, text });
        }
        let mut tops = Vec::new();
        for p in &case.activity_top {
            let text = std::fs::read_to_string(repo_root().join(p))
                .map_err(|e| format!("activity_top {p}: {e}"))?;
            let name = Path::new(p)
                .file_name()
                .map_or(p.to_string(), |n| n.to_string_lossy().into_owned());
            tops.push(Dump { name, text });
        }
        let mut errors = BTreeMap::new();
        for e in &case.device_errors {
            if errors.insert(e.at, e.clone()).is_some() {
                return Err(format!("two device errors at dump call {}", e.at));
            }
        }
        Ok(Script {
            dumps,
            tops,
            errors,
            log: Mutex::new(Served::default()),
        })
    }

    /// The answer to the next dump call: a scripted error, or the next dump (the last
    /// one repeats).
    fn next_dump(&self) -> Result<String, ScriptedError> {
        let mut log = self.log.lock().expect("script lock");
        let call = log.names.len();
        if let Some(e) = self.errors.get(&call) {
            log.names.push("scripted error".into());
            return Err(e.clone());
        }
        let i = log.next.min(self.dumps.len() - 1);
        log.next += 1;
        log.names.push(self.dumps[i].name.clone());
        Ok(self.dumps[i].text.clone())
    }

    /// The answer to the next `dumpsys activity top` (the last one repeats; nothing
    /// when the case names none).
    fn next_top(&self) -> String {
        let mut log = self.log.lock().expect("script lock");
        let i = log.tops.len();
        match self.tops.get(i.min(self.tops.len().saturating_sub(1))) {
            Some(t) => {
                log.tops.push(t.name.clone());
                t.text.clone()
            }
            None => {
                log.tops.push("empty output".into());
                String::new()
            }
        }
    }

    /// What answered each dump call, in order.
    fn served(&self) -> Vec<String> {
        self.log.lock().expect("script lock").names.clone()
    }

    /// What answered each `dumpsys activity top`, in order.
    fn served_tops(&self) -> Vec<String> {
        self.log.lock().expect("script lock").tops.clone()
    }
}

// ======================================================================================
// THE SCRIPTED DEVICE — the only code here that knows the device trait and the driver's
// signature. Port this block (and nothing else) when the trait changes.
// ======================================================================================

use std::time::Duration;

use cmautobuy_client::clock::VirtualClock;
use cmautobuy_client::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use cmautobuy_client::job::driver::{drive, DriveLimits};
use cmautobuy_client::job::guard::GuardedDevice;
use cmautobuy_client::screen::{Point, Tree};

/// A phone that answers dumps from a [`Script`] and accepts every gesture.
struct ScriptedDevice<'a>(&'a Script);

impl Device for ScriptedDevice<'_> {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        match self.0.next_dump() {
            Ok(xml) => {
                let tree = Tree::parse(&xml)?;
                Ok(UiDump { xml, tree })
            }
            // A scripted uiautomator failure: its text must be one the parser refuses
            // with the code the case names.
            Err(e) => match e.dump_code {
                Some(code) => match Tree::parse(&e.message) {
                    Err(d) if d.code() == code => Err(DeviceError::Dump(d)),
                    other => panic!(
                        "case error: `{}` is not a dump failure with code {code} ({other:?})",
                        e.message
                    ),
                },
                None if e.retryable => Err(DeviceError::Io(e.message)),
                None => Err(DeviceError::CommandFailed {
                    program: "uiautomator".into(),
                    exit_code: 1,
                    stderr: e.message,
                }),
            },
        }
    }
    fn tap(&self, _: Point) -> Result<(), DeviceError> {
        Ok(())
    }
    fn swipe(&self, _: Point, _: Point, _: Duration) -> Result<(), DeviceError> {
        Ok(())
    }
    fn key(&self, _: KeyCode) -> Result<(), DeviceError> {
        Ok(())
    }
    fn open_url(&self, _: &str) -> Result<(), DeviceError> {
        Ok(())
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        Ok(Png {
            bytes: b"\x89PNG\r\n\x1a\n".to_vec(),
            width: 0,
            height: 0,
        })
    }
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        if argv == ["dumpsys", "activity", "top"] {
            return Ok(ShellOutput {
                stdout: self.0.next_top().into_bytes(),
                ..ShellOutput::default()
            });
        }
        Ok(ShellOutput::default())
    }
}

/// Drives `flow` on the script behind the device guard (`submit_allowed` for a live
/// purchase) with `effects`, the virtual clock from `start`, no artifacts, the default
/// limits but `max_actions` when given.
fn run(
    flow: &mut dyn Flow,
    script: &Script,
    effects: &mut dyn Effects,
    start: DateTime<Utc>,
    submit_allowed: bool,
    max_actions: Option<u32>,
) -> DriveReport {
    let mut limits = DriveLimits::default();
    if let Some(n) = max_actions {
        limits.max_actions = n;
    }
    drive(
        flow,
        &GuardedDevice::new(ScriptedDevice(script), submit_allowed),
        effects,
        &VirtualClock::new(start),
        None,
        limits,
    )
}

// ======================================================================================
// END OF THE SCRIPTED DEVICE
// ======================================================================================

/// The executor's effects, answered from `case.json`; an effect without an answer fails
/// (not retryable).
struct ScriptedEffects {
    answers: EffectAnswers,
    marked_at: DateTime<Utc>,
    /// The spec resolution requests sent, rendered (what the Admin was asked).
    spec_requests: Vec<String>,
}

/// A response's `candidate_snapshot_hash` that stands for the request's own hash (the
/// hash of the page's sizes, which a fixture author cannot easily compute by hand).
const FROM_REQUEST: &str = "$request";

fn spec_request_line(r: &SpecResolutionRequest) -> String {
    let cands: Vec<String> = r
        .candidates
        .iter()
        .map(|c| format!("{}={}", c.candidate_id, c.raw_text))
        .collect();
    format!(
        "spec request: selected_color={} target_size={} candidates=[{}] original_options={}",
        r.selected_color,
        r.target_size,
        cands.join(", "),
        options(&r.original_options)
    )
}

impl Effects for ScriptedEffects {
    fn perform(&mut self, effect: &Effect) -> EffectOutcome {
        let answer = match effect {
            Effect::MarkIrreversible { .. } => self.answers.mark.clone(),
            Effect::NoteProceed { .. } => {
                Some(self.answers.note_proceed.clone().unwrap_or(Answer::Noted))
            }
            Effect::ResolveSpec(req) => {
                self.spec_requests.push(spec_request_line(req));
                match &self.answers.resolve_spec {
                    Some(SpecAnswer::Response(r)) => {
                        let mut r = r.clone();
                        if r.candidate_snapshot_hash == FROM_REQUEST {
                            r.candidate_snapshot_hash = req.candidate_snapshot_hash.clone();
                        }
                        return EffectOutcome::Resolved(r);
                    }
                    Some(SpecAnswer::Other(a)) => Some(a.clone()),
                    None => None,
                }
            }
        };
        match answer {
            Some(Answer::Marked) => EffectOutcome::Marked { at: self.marked_at },
            Some(Answer::Noted) => EffectOutcome::Noted,
            Some(Answer::Refused(reason)) => EffectOutcome::Refused { reason },
            Some(Answer::Failed(message)) => EffectOutcome::Failed {
                message,
                retryable: true,
            },
            None => EffectOutcome::Failed {
                message: "no answer scripted for this effect".into(),
                retryable: false,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running a case and rendering what happened
// ---------------------------------------------------------------------------------------

fn default_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap()
}

/// Builds the case's flow; `Err` is the flow refusing its task before the phone.
fn build_flow(m: Machine) -> Result<Box<dyn Flow>, Box<FlowFailure>> {
    Ok(match m {
        Machine::Collect(t) => Box::new(CollectFlow::new(
            CollectTask {
                goods_id: t.goods_id,
                expected_title: t.expected_title,
            },
            CollectLimits::default(),
        )?),
        Machine::Purchase(t) => Box::new(
            PurchaseFlow::new(
                PurchaseTask {
                    remote_task_id: t.remote_task_id,
                    attempt_id: t.attempt_id,
                    task_version: t.task_version,
                    goods_id: t.goods_id,
                    expected_title: t.expected_title,
                    options: t.options,
                    quantity: t.quantity,
                    max_price: Fen(t.max_price_cent),
                    live: t.live,
                    expected_address: t.expected_address,
                },
                PurchaseLimits::default(),
            )?
            .with_reconcile(t.context.context()),
        ),
        Machine::Reconcile(t) => Box::new(
            ReconcileFlow::new(
                t.confirmation,
                t.submitted_at,
                t.recovery,
                ReconcileLimits::default(),
            )
            .with_context(t.context.context()),
        ),
        Machine::Account(AccountCase {}) => Box::new(AccountFlow::new(AccountLimits::default())),
    })
}

/// What running a case gave: its rendering, or why it could not be checked.
enum Ran {
    Rendered(String),
    /// Its shared dumps are absent and `CMAUTOBUY_NO_SHARED=1` accepts that.
    NotChecked(String),
}

/// Runs the case in `dir` and renders the result.
fn run_case(dir: &Path) -> Result<Ran, String> {
    let path = dir.join("case.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    // `Case` cannot deny unknown fields itself (`flatten`): a misspelt key would be
    // ignored silently.
    if let Some(unknown) = value
        .as_object()
        .and_then(|o| o.keys().find(|k| !CASE_KEYS.contains(&k.as_str())))
    {
        return Err(format!("{}: unknown field `{unknown}`", path.display()));
    }
    let case: Case =
        serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(why) = shared_not_checked(&case, no_shared_accepted()) {
        return Ok(Ran::NotChecked(why));
    }
    let script = Script::load(&case)?;
    let start = case.start.unwrap_or_else(default_start);
    let mut effects = ScriptedEffects {
        answers: case.effects,
        marked_at: start,
        spec_requests: Vec::new(),
    };
    // The device guard allows the one submit only to a live purchase.
    let submit_allowed = matches!(&case.machine, Machine::Purchase(t) if t.live);
    let mut flow = match build_flow(case.machine) {
        Ok(f) => f,
        Err(f) => {
            return Ok(Ran::Rendered(format!(
                "refused before the phone: {}\n",
                failure_line(&f)
            )))
        }
    };
    let report = run(
        flow.as_mut(),
        &script,
        &mut effects,
        start,
        submit_allowed,
        case.max_actions,
    );
    let mut out = render(&report, &script.served(), &script.served_tops());
    for line in &effects.spec_requests {
        out.push_str(line);
        out.push('\n');
    }
    Ok(Ran::Rendered(out))
}

fn failure_line(f: &FlowFailure) -> String {
    format!(
        "failed status={} code={} step={}",
        f.status.as_str(),
        f.code.as_str(),
        f.step.as_str()
    )
}

fn options(o: &OptionMap) -> String {
    let parts: Vec<String> = o.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

fn fen(f: Option<Fen>) -> String {
    f.map_or("null".into(), |f| f.get().to_string())
}

fn or_dash(s: Option<&str>) -> &str {
    s.unwrap_or("-")
}

/// The trace (observe and read lines name the file that answered), the outcome, the
/// stats.
fn render(r: &DriveReport, served: &[String], tops: &[String]) -> String {
    let mut out = String::new();
    let mut dumps = served.iter();
    let mut tops = tops.iter();
    for t in &r.trace {
        let mut line = format!("{} {} {}", t.kind, or_dash(t.step.as_deref()), t.detail);
        let answered = match t.kind {
            "observe" => dumps.next(),
            "read_goods_id" => tops.next(),
            _ => None,
        };
        if let Some(name) = answered {
            let _ = write!(line, " [{name}]");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    match &r.outcome {
        FlowOutcome::Failed(f) => {
            let _ = writeln!(out, "outcome: {}", failure_line(f));
            let _ = writeln!(out, "  message: {}", f.message);
            for (k, v) in &f.diagnostics {
                let _ = writeln!(out, "  diagnostics.{k}: {v}");
            }
        }
        FlowOutcome::Collected(d) => render_collected(&mut out, d),
        FlowOutcome::Purchased(p) => render_purchased(&mut out, p),
        FlowOutcome::Account(a) => {
            let _ = writeln!(
                out,
                "outcome: account nickname={} masked_phone={}",
                a.nickname.as_deref().unwrap_or("-"),
                a.masked_phone.as_deref().unwrap_or("-")
            );
        }
    }
    let s = &r.stats;
    let _ = writeln!(
        out,
        "stats: dumps={} dump_failures={} taps={} swipes={} backs={} open_urls={} \
         screenshots={} waits={} device_errors={}",
        s.dumps,
        s.dump_failures,
        s.taps,
        s.swipes,
        s.backs,
        s.open_urls,
        s.screenshots,
        s.waits,
        s.device_errors
    );
    if s.goods_id_reads > 0 {
        // Only when there were any: older cases keep their line.
        out.pop();
        let _ = writeln!(out, " goods_id_reads={}", s.goods_id_reads);
    }
    out
}

fn render_collected(out: &mut String, d: &PddData) {
    let _ = writeln!(
        out,
        "outcome: collected goods_id={} price_granularity={}",
        d.goods_id,
        serde_json::to_value(d.price_granularity)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "  title: {}", or_dash(d.title.as_deref()));
    let _ = writeln!(out, "  shop: {}", or_dash(d.shop_name.as_deref()));
    for (k, v) in &d.extra {
        let _ = writeln!(out, "  {k}: {v}");
    }
    for dim in &d.dimensions {
        let _ = writeln!(out, "  dimension {} {}", dim.key, dim.name);
    }
    for s in &d.skus {
        let _ = writeln!(
            out,
            "  sku {} price={} list={} raw={} observed_at={} {}",
            options(&s.options),
            fen(s.price_cent),
            fen(s.list_price_cent),
            or_dash(s.raw_price.as_deref()),
            options(&s.price_observed_at),
            if s.available {
                "available"
            } else {
                "unavailable"
            }
        );
    }
}

fn render_purchased(out: &mut String, p: &PurchaseResult) {
    let _ = writeln!(
        out,
        "outcome: purchased mode={} goods_id={}",
        p.mode.as_str(),
        p.goods_id
    );
    let _ = writeln!(
        out,
        "  options={} quantity={} confirmed_total_cent={} max_price_cent={}",
        options(&p.options),
        p.quantity,
        fen(p.confirmed_total_cent),
        p.max_price_cent.get()
    );
    let _ = writeln!(
        out,
        "  order_submitted={} payment_attempted={} payment_status={} match_status={}",
        p.order_submitted, p.payment_attempted, p.payment_status, p.match_status
    );
    let _ = writeln!(
        out,
        "  order_sn={} ordered_at={} irreversible_action_at={} spec_resolution_id={}",
        or_dash(p.order_sn.as_deref()),
        or_dash(p.ordered_at.as_deref()),
        or_dash(p.irreversible_action_at.as_deref()),
        or_dash(p.spec_resolution_id.as_deref())
    );
    for (k, v) in &p.extra {
        let _ = writeln!(out, "  {k}: {v}");
    }
}

// ---------------------------------------------------------------------------------------
// Comparing with expected.txt
// ---------------------------------------------------------------------------------------

/// A line diff (longest common subsequence): `-` expected only, `+` actual only.
fn diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    // lcs[i][j]: common lines of e[i..] and a[j..].
    let mut lcs = vec![vec![0usize; a.len() + 1]; e.len() + 1];
    for i in (0..e.len()).rev() {
        for j in (0..a.len()).rev() {
            lcs[i][j] = if e[i] == a[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < e.len() || j < a.len() {
        if i < e.len() && j < a.len() && e[i] == a[j] {
            let _ = writeln!(out, "  {}", e[i]);
            i += 1;
            j += 1;
        } else if i < e.len() && (j == a.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", e[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", a[j]);
            j += 1;
        }
    }
    out
}

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

/// How a case checked out.
#[derive(Debug, PartialEq, Eq)]
enum Checked {
    Passed,
    /// Not run: its shared dumps are absent and that is accepted (why).
    NotChecked(String),
}

/// Runs the case in `dir` and compares the rendering with its `expected.txt` (or, with
/// `UPDATE_EXPECT=1`, writes it). `Err` says what is wrong, with a diff.
fn check(dir: &Path) -> Result<Checked, String> {
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let actual = match run_case(dir).map_err(|e| format!("{name}: {e}"))? {
        Ran::Rendered(text) => text,
        Ran::NotChecked(why) => return Ok(Checked::NotChecked(format!("{name}: {why}"))),
    };
    let expected_path = dir.join("expected.txt");
    if updating() {
        eprintln!("UPDATE_EXPECT=1: writing {}", expected_path.display());
        return std::fs::write(&expected_path, &actual)
            .map(|()| Checked::Passed)
            .map_err(|e| format!("{name}: write {}: {e}", expected_path.display()));
    }
    let expected = std::fs::read_to_string(&expected_path).map_err(|e| {
        format!(
            "{name}: {}: {e} (UPDATE_EXPECT=1 writes it; review it before committing)",
            expected_path.display()
        )
    })?;
    if expected == actual {
        return Ok(Checked::Passed);
    }
    Err(format!(
        "{name}: the flow no longer does what {} says (- expected, + actual; \
         UPDATE_EXPECT=1 rewrites it):\n{}",
        expected_path.display(),
        diff(&expected, &actual)
    ))
}

#[test]
fn every_flow_case_does_what_its_expected_file_says() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("fixtures/flows")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases under fixtures/flows");
    let mut problems: Vec<String> = Vec::new();
    let mut not_checked: Vec<String> = Vec::new();
    for d in &dirs {
        match check(d) {
            Ok(Checked::Passed) => {}
            Ok(Checked::NotChecked(why)) => not_checked.push(why),
            Err(e) => problems.push(e),
        }
    }
    if !not_checked.is_empty() {
        // Straight to the process's stderr: the test harness captures `eprintln!` of a
        // passing test, and this must be seen.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\n\n!!! NOT CHECKED: {} flow case(s) name real dumps that are missing:\n{}\n\
             !!! Put the shared material next to the repository to check them.\n",
            not_checked.len(),
            not_checked
                .iter()
                .map(|w| format!("!!!   {w}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    assert!(
        problems.is_empty(),
        "{} of {} flow cases failed:\n\n{}",
        problems.len(),
        dirs.len(),
        problems.join("\n")
    );
}

#[test]
fn the_diff_shows_changed_lines() {
    let d = diff("a\nb\nc\n", "a\nx\nc\nd\n");
    assert_eq!(d, "  a\n- b\n+ x\n  c\n+ d\n");
}

#[test]
fn a_missing_shared_dump_is_not_checked_only_when_accepted() {
    let case = |dumps: &[&str]| -> Case {
        serde_json::from_value(serde_json::json!({
            "why": "harness", "machine": "collect", "task": {"goods_id": "1"},
            "dumps": dumps,
        }))
        .expect("case")
    };
    let missing = case(&["../shared/no-such-dir-for-the-flow-test/a.xml"]);
    // Accepted (CMAUTOBUY_NO_SHARED=1): reported, not run.
    let why = shared_not_checked(&missing, true).expect("not checked");
    assert!(why.contains("no-such-dir-for-the-flow-test"), "{why}");
    // Not accepted: the case runs and fails on the missing dump, saying why.
    assert!(shared_not_checked(&missing, false).is_none());
    let err = Script::load(&missing).err().expect("a missing dump fails");
    assert!(err.contains("CMAUTOBUY_NO_SHARED"), "{err}");
    // A missing dump inside the repository is never excused.
    let ours = case(&["fixtures/screens/no-such-fixture.xml"]);
    assert!(shared_not_checked(&ours, true).is_none());
    // Shared dumps that are there are checked.
    if repo_root().join("../shared/pdd-real-dumps").is_dir() {
        let there = case(&["../shared/pdd-real-dumps/pdd_checkout_sheet_image_sku.xml"]);
        assert!(shared_not_checked(&there, true).is_none());
    }
}
