//! 设置 Settings (`/settings`): per worker the client's name, Admin URL, token and phone,
//! and what going live needs — the address fingerprint (`expected_address`), the
//! self-test's goods (`self_test_goods_id`), the purchase mode; for the whole console
//! the webhooks and the console password.
//!
//! - **Name**: checked exactly as the Admin checks it (§4.1,
//!   `cmautobuy_contract::validate::client_name`: ≤ 50 characters, no control
//!   characters); required.
//! - **Admin URL**: an `http://` or `https://` URL.
//! - **Token**: write-only. The field is always empty; an empty field keeps the saved
//!   token; the page says only whether one is saved — the token is never in the page.
//! - **Phone**: picked from what the adb server lists now (`host:devices-l`, within
//!   [`ADB_LIST_DEADLINE`]; a phone plugged in later shows at the next load), or typed
//!   (`tcp:HOST:PORT` or a serial); the running worker keeps its phone until the client
//!   restarts.
//!
//! Saving writes SQLite first (`registration::save_locally`, the same code path as
//! `cmautobuy-client register`), then registers in the background
//! ([`ConsoleState::registrar`], §4.1); the page shows the outcome the store records
//! (pending → registered at … / the error). Claims use the Admin URL and token the client
//! started with until it restarts.
//!
//! **Going live, without a restart** (`POST /settings/live`, `/settings/webhooks`,
//! `/settings/password`): the values go into the store (`Store::set_operator_*`, rows
//! `operator.*`), and every reader reads the store at its next use — the claim loop at
//! each claim (`runner::LivePolicy::with_operator`), the purchase job at each task (the
//! address fingerprint), the notifier at each scan and send (its webhooks), the console
//! at each login (the password hash, kept in [`ConsoleState`] as well); after a live
//! save the worker registers again so the Admin hears what it now declares.
//! Precedence, shown on the page: the console's address fingerprint and self-test goods
//! win over the configuration's (cleared: the configuration's again); for the purchase
//! mode the strictest wins — `dry_run` in the configuration, `--dry-run-only` or here;
//! webhooks are the configuration's and the console's together (the console's can be
//! removed here, the configuration's only in its file); a password set here replaces the
//! configured one. A webhook URL is a secret: the page names it by its `wh-` id only,
//! never echoes a URL or signing secret typed into it (refused or not); the password is
//! stored as its PBKDF2 hash only and never served. Every POST passes the guard (Host,
//! Origin, session, CSRF) like every other.

use std::time::Duration;

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::auth_routes::Peer;
use super::layout::render;
use super::state::{ConsoleState, ConsoleWorker};
use super::view::{Shell, Tab};
use crate::device::adb::{list_devices, ListedDevice};
use crate::notify::{Webhook, WebhookConfig};
use crate::registration;
use crate::secret::Secret;
use crate::store::{OperatorSettings, Settings, SettingsPatch};

/// How long the settings page waits for the adb server's device list.
pub const ADB_LIST_DEADLINE: Duration = Duration::from_secs(3);

/// The most parts an address fingerprint may have, and the longest part.
const MAX_ADDRESS_PARTS: usize = 8;
const MAX_ADDRESS_PART_CHARS: usize = 120;

/// `/settings` (GET the form, POST a save), `/settings/live`, `/settings/webhooks`,
/// `/settings/password`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/settings", get(settings_page).post(save))
        .route("/settings/live", post(save_live))
        .route("/settings/webhooks", post(save_webhooks))
        .route("/settings/password", post(save_password))
}

#[derive(Deserialize, Default)]
struct PageQuery {
    #[serde(default)]
    saved: Option<usize>,
    #[serde(default)]
    live: Option<usize>,
    #[serde(default)]
    webhook: Option<u8>,
    #[serde(default)]
    password: Option<u8>,
}

/// The identity form's fields (the token never comes back from the page).
#[derive(Deserialize, Default, Clone)]
pub struct SettingsForm {
    #[serde(default)]
    pub worker: usize,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub admin_url: String,
    #[serde(default)]
    pub token: String,
    /// The phone picked from the list (empty: none picked).
    #[serde(default)]
    pub device_pick: String,
    /// A phone typed in (wins over the pick).
    #[serde(default)]
    pub device_text: String,
}

/// Field errors: (field, message).
pub type FieldErrors = Vec<(&'static str, String)>;

/// What a valid identity form changes.
pub fn validate(f: &SettingsForm) -> Result<SettingsPatch, FieldErrors> {
    let mut errors = Vec::new();
    let name = f.name.trim();
    if name.is_empty() {
        errors.push(("name", "名称必填 a name is required".to_string()));
    } else if let Err(v) = cmautobuy_contract::validate::client_name(name) {
        errors.push(("name", format!("名称无效 {v}")));
    }
    let url = f.admin_url.trim();
    // The one check of an Admin URL, with the URL to write instead (`127.0.0.1:18080`,
    // a trailing `/api/v1`, a password in it …).
    if let Err(e) = crate::config::admin_url::check(url) {
        errors.push(("admin_url", e.to_string()));
    }
    let token = f.token.trim();
    if token.chars().any(char::is_control) || token.contains(' ') {
        errors.push((
            "token",
            "令牌无效 the token has spaces or control characters".to_string(),
        ));
    }
    let device = if !f.device_text.trim().is_empty() {
        f.device_text.trim()
    } else {
        f.device_pick.trim()
    };
    if device.chars().any(|c| c.is_control() || c.is_whitespace()) || device.len() > 200 {
        errors.push((
            "device",
            "设备无效 not a serial or tcp:HOST:PORT".to_string(),
        ));
    } else if let Some(rest) = device.strip_prefix("tcp:") {
        let ok = rest
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !ok {
            errors.push(("device", "设备无效 expected tcp:HOST:PORT".to_string()));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(SettingsPatch {
        name: Some(name.to_string()),
        admin_url: Some(url.to_string()),
        token: (!token.is_empty()).then(|| Secret::new(token.to_string())),
        device: (!device.is_empty()).then(|| device.to_string()),
    })
}

/// The going-live form's fields.
#[derive(Deserialize, Default, Clone)]
pub struct LiveForm {
    #[serde(default)]
    pub worker: usize,
    /// One part per line.
    #[serde(default)]
    pub expected_address: String,
    #[serde(default)]
    pub self_test_goods_id: String,
    /// `auto` or `dry_run`.
    #[serde(default)]
    pub purchase_mode: String,
}

/// What a valid going-live form sets (`None`: cleared — the configuration's holds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LivePatch {
    pub expected_address: Option<Vec<String>>,
    pub self_test_goods_id: Option<String>,
    /// `Some("dry_run")`, or `None` (auto: the configuration decides).
    pub purchase_mode: Option<&'static str>,
}

/// Checks the going-live form: each address part trimmed (empty lines dropped; at most
/// [`MAX_ADDRESS_PARTS`] of at most [`MAX_ADDRESS_PART_CHARS`] characters, no control
/// characters), a goods id as the configuration checks it, a known mode.
pub fn validate_live(f: &LiveForm) -> Result<LivePatch, FieldErrors> {
    let mut errors = Vec::new();
    let parts: Vec<String> = f
        .expected_address
        .lines()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if parts.len() > MAX_ADDRESS_PARTS {
        errors.push((
            "expected_address",
            format!("地址指纹最多 {MAX_ADDRESS_PARTS} 项 at most {MAX_ADDRESS_PARTS} parts"),
        ));
    }
    if parts
        .iter()
        .any(|p| p.chars().count() > MAX_ADDRESS_PART_CHARS || p.chars().any(char::is_control))
    {
        errors.push((
            "expected_address",
            format!(
                "每项最多 {MAX_ADDRESS_PART_CHARS} 个字符、不含控制字符 each part at most {MAX_ADDRESS_PART_CHARS} characters, no control characters"
            ),
        ));
    }
    let goods = f.self_test_goods_id.trim();
    if !goods.is_empty() && !crate::self_test::valid_goods_id(goods) {
        errors.push((
            "self_test_goods_id",
            "商品编号无效（1–24 位数字） not a goods id (1–24 digits)".to_string(),
        ));
    }
    let mode = match f.purchase_mode.trim() {
        "" | "auto" => None,
        "dry_run" => Some("dry_run"),
        _ => {
            errors.push((
                "purchase_mode",
                "购买模式为 auto 或 dry_run the mode is auto or dry_run".to_string(),
            ));
            None
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(LivePatch {
        expected_address: (!parts.is_empty()).then_some(parts),
        self_test_goods_id: (!goods.is_empty()).then(|| goods.to_string()),
        purchase_mode: mode,
    })
}

/// A value in force and where it comes from.
pub struct Effective {
    pub value: String,
    pub source: String,
}

/// The registration line.
pub struct RegistrationLine {
    pub class: &'static str,
    pub zh: String,
    pub en: String,
}

/// One phone's settings section.
pub struct PhoneSettings {
    pub i: usize,
    pub label: String,
    pub client_id: String,
    pub store_error: Option<String>,
    pub just_saved: bool,
    pub errors: FieldErrors,
    pub registration: RegistrationLine,
    pub name: String,
    pub admin_url: String,
    pub has_token: bool,
    pub device: String,
    pub device_text: String,
    pub live_saved: bool,
    pub live_errors: FieldErrors,
    pub mode: Effective,
    pub mode_dry_run: bool,
    pub address: Effective,
    pub goods: Effective,
    /// What the form's fields hold: the console's values (or what was refused).
    pub address_text: String,
    pub goods_text: String,
    /// Why live waits, as the claim loop last recorded it.
    pub live_note: Option<String>,
}

/// A webhook by name.
pub struct HookRow {
    pub id: String,
    pub label: String,
    pub format: String,
}

/// `/settings`.
#[derive(Template)]
#[template(path = "console/settings.html")]
pub struct SettingsPage<'a> {
    pub shell: Shell,
    pub csrf: &'a str,
    pub phones: Vec<PhoneSettings>,
    pub listed: Vec<ListedDevice>,
    pub listed_note: Option<String>,
    pub config_hooks: Vec<HookRow>,
    pub console_hooks: Vec<HookRow>,
    pub webhook_saved: bool,
    pub webhook_error: Option<String>,
    pub has_password: bool,
    pub password_source: &'static str,
    pub password_saved: bool,
    pub password_error: Option<String>,
    pub min_password: usize,
}

/// What a render shows besides the stores: the flags of a redirect after a save, or a
/// refused form.
#[derive(Default)]
struct Shown {
    saved: Option<usize>,
    live_saved: Option<usize>,
    webhook_saved: bool,
    password_saved: bool,
    failed: Option<(SettingsForm, FieldErrors)>,
    live_failed: Option<(LiveForm, FieldErrors)>,
    webhook_error: Option<String>,
    password_error: Option<String>,
}

async fn settings_page(State(state): State<ConsoleState>, q: Query<PageQuery>) -> Response {
    let shown = Shown {
        saved: q.saved,
        live_saved: q.live,
        webhook_saved: q.webhook == Some(1),
        password_saved: q.password == Some(1),
        ..Shown::default()
    };
    page(&state, shown, StatusCode::OK).await
}

async fn save(State(state): State<ConsoleState>, Form(f): Form<SettingsForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let patch = match validate(&f) {
        Ok(p) => p,
        Err(errors) => {
            let shown = Shown {
                failed: Some((f, errors)),
                ..Shown::default()
            };
            return page(&state, shown, StatusCode::UNPROCESSABLE_ENTITY).await;
        }
    };
    let store = w.store.clone();
    let saved =
        tokio::task::spawn_blocking(move || registration::save_locally(&store, &patch)).await;
    match saved {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return super::status::store_error(e),
        Err(e) => return super::status::store_error(e),
    }
    tracing::info!(worker = f.worker, "console: settings saved");
    register_in_background(&state, w);
    Redirect::to(&format!("/settings?saved={}", f.worker)).into_response()
}

/// §4.1 registration of `w` in the background (the page shows what the store records).
fn register_in_background(state: &ConsoleState, w: &ConsoleWorker) {
    if let Some(reg) = state.registrar.clone() {
        let store = w.store.clone();
        // Pending until the Admin answers; the page shows what the store records.
        let _ = store.set_registration_status(&crate::store::RegistrationStatus {
            state: "pending".into(),
            at: cmautobuy_contract::time::format_utc(chrono::Utc::now()),
            error: None,
            rejected: false,
        });
        tokio::spawn(async move {
            reg(store).await;
        });
    }
}

async fn save_live(State(state): State<ConsoleState>, Form(f): Form<LiveForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let patch = match validate_live(&f) {
        Ok(p) => p,
        Err(errors) => {
            let shown = Shown {
                live_failed: Some((f, errors)),
                ..Shown::default()
            };
            return page(&state, shown, StatusCode::UNPROCESSABLE_ENTITY).await;
        }
    };
    let store = w.store.clone();
    let p = patch.clone();
    let saved = tokio::task::spawn_blocking(move || {
        store.set_operator_expected_address(p.expected_address.as_deref())?;
        store.set_operator_self_test_goods_id(p.self_test_goods_id.as_deref())?;
        store.set_operator_purchase_mode(p.purchase_mode)
    })
    .await;
    match saved {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return super::status::store_error(e),
        Err(e) => return super::status::store_error(e),
    }
    tracing::info!(
        worker = f.worker,
        address_parts = patch.expected_address.as_ref().map_or(0, Vec::len),
        self_test_goods_id = ?patch.self_test_goods_id,
        purchase_mode = patch.purchase_mode.unwrap_or("auto"),
        "console: going-live settings saved (in force from the next claim)"
    );
    // The Admin hears what a claim now declares.
    register_in_background(&state, w);
    Redirect::to(&format!("/settings?live={}#live-w{}", f.worker, f.worker)).into_response()
}

/// The webhooks form: add (URL, format, signing secret, name) or remove (by id).
#[derive(Deserialize, Default)]
struct WebhookForm {
    #[serde(default)]
    action: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    format: String,
    #[serde(default)]
    secret: String,
    #[serde(default)]
    name: String,
}

/// The console's webhooks of a store, as saved (JSON tables) and checked.
fn console_hooks(op: &OperatorSettings) -> (Vec<serde_json::Value>, Vec<Webhook>) {
    let raw: Vec<serde_json::Value> = op
        .webhooks_json
        .as_deref()
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default();
    let checked = op
        .webhooks_json
        .as_deref()
        .map(crate::notify::stored_webhooks)
        .unwrap_or_default();
    (raw, checked)
}

async fn save_webhooks(State(state): State<ConsoleState>, Form(f): Form<WebhookForm>) -> Response {
    // What to store: the list after the change (the same in every phone's store: the
    // console's webhooks are the process's, like the configured ones).
    let workers = state.workers.clone();
    let config_ids: Vec<String> = state.config_webhooks.iter().map(|h| h.id.clone()).collect();
    let outcome = tokio::task::spawn_blocking(move || -> Result<Result<(), String>, crate::store::StoreError> {
        let Some(first) = workers.first() else {
            return Ok(Err("no phone".into()));
        };
        let (mut raw, checked) = console_hooks(&first.store.operator_settings()?);
        match f.action.as_str() {
            "add" => {
                let format = match f.format.as_str() {
                    "json" | "wecom" | "dingtalk" | "feishu" => f.format.clone(),
                    _ => return Ok(Err("格式未知 unknown format".into())),
                };
                let mut table = serde_json::json!({"url": f.url.trim(), "format": format});
                if !f.secret.trim().is_empty() {
                    table["secret"] = serde_json::json!(f.secret.trim());
                }
                if !f.name.trim().is_empty() {
                    if f.name.chars().count() > 60 || f.name.chars().any(char::is_control) {
                        return Ok(Err("名称最多 60 个字符 the name is at most 60 characters".into()));
                    }
                    table["name"] = serde_json::json!(f.name.trim());
                }
                let cfg: WebhookConfig = match serde_json::from_value(table.clone()) {
                    Ok(c) => c,
                    Err(_) => return Ok(Err("网址无效 not a webhook".into())),
                };
                // The checks of a configured webhook; the message names no URL.
                let hook = match Webhook::from_config(&cfg) {
                    Ok(h) => h,
                    Err(e) => return Ok(Err(e)),
                };
                if config_ids.contains(&hook.id) || checked.iter().any(|h| h.id == hook.id) {
                    return Ok(Err(format!("{} 已存在 is configured already", hook.id)));
                }
                raw.push(table);
            }
            "remove" => {
                let before = raw.len();
                raw.retain(|t| {
                    let cfg: Option<WebhookConfig> = serde_json::from_value(t.clone()).ok();
                    cfg.and_then(|c| Webhook::from_config(&c).ok())
                        .is_none_or(|h| h.id != f.id)
                });
                if raw.len() == before {
                    return Ok(Err("没有这个 webhook no such webhook (config.toml's are removed in the file)".into()));
                }
            }
            _ => return Ok(Err("unknown action".into())),
        }
        let json = (!raw.is_empty()).then(|| serde_json::Value::Array(raw).to_string());
        for w in workers.iter() {
            w.store.set_operator_webhooks_json(json.as_deref())?;
        }
        Ok(Ok(()))
    })
    .await;
    match outcome {
        Ok(Ok(Ok(()))) => {
            tracing::info!("console: webhooks saved (in force from the notifier's next scan)");
            Redirect::to("/settings?webhook=1#webhooks").into_response()
        }
        Ok(Ok(Err(why))) => {
            let shown = Shown {
                webhook_error: Some(why),
                ..Shown::default()
            };
            page(&state, shown, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Ok(Err(e)) => super::status::store_error(e),
        Err(e) => super::status::store_error(e),
    }
}

/// The password form.
#[derive(Deserialize, Default)]
struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    confirm: String,
}

async fn save_password(
    State(state): State<ConsoleState>,
    Peer(ip): Peer,
    Form(f): Form<PasswordForm>,
) -> Response {
    let refuse = |why: String, status: StatusCode| {
        let state = state.clone();
        async move {
            let shown = Shown {
                password_error: Some(why),
                ..Shown::default()
            };
            page(&state, shown, status).await
        }
    };
    // The current password, when there is one, is checked like a login (and counted by
    // the same throttle: this form is no way around it).
    if let Some(hash) = state.password() {
        if let Err(wait) = state.throttle().check(ip, state.login_now()) {
            return refuse(
                format!(
                    "密码错误次数过多，请 {} 秒后再试 too many wrong passwords: try again later",
                    wait.as_secs().max(1)
                ),
                StatusCode::TOO_MANY_REQUESTS,
            )
            .await;
        }
        let current = f.current.clone();
        let ok = tokio::task::spawn_blocking(move || hash.verify(&current))
            .await
            .unwrap_or(false);
        if !ok {
            state.throttle().failed(ip, state.login_now());
            return refuse(
                "当前密码错误 the current password is wrong".into(),
                StatusCode::UNAUTHORIZED,
            )
            .await;
        }
        state.throttle().succeeded(ip);
    }
    if let Err(e) = super::listen::check_password_length(&f.new) {
        return refuse(e.to_string(), StatusCode::UNPROCESSABLE_ENTITY).await;
    }
    if f.new != f.confirm {
        return refuse(
            "两次输入不一致 the two entries differ".into(),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    // A secret of this process from now on: scrubbed wherever it would show.
    let new = Secret::new(f.new);
    let workers = state.workers.clone();
    let hashed = tokio::task::spawn_blocking(move || {
        let hash = super::auth::PasswordHash::new(new.expose());
        let phc = hash.to_phc();
        for w in workers.iter() {
            w.store.set_console_password_hash(Some(&phc))?;
        }
        Ok::<_, crate::store::StoreError>(hash)
    })
    .await;
    let hash = match hashed {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => return super::status::store_error(e),
        Err(e) => return super::status::store_error(e),
    };
    state.set_password(hash);
    // Every browser logs in again, but the one that changed it.
    state.sessions().close_all();
    let id = state.sessions().open();
    tracing::warn!("console: the console password was changed on the settings page");
    let mut r = Redirect::to("/settings?password=1#password").into_response();
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict",
        super::auth::COOKIE
    )) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// Where a value in force comes from.
fn source(console: bool, config: bool) -> String {
    match (console, config) {
        (true, true) => "本页设置（取代 config.toml 的） set here (over config.toml's)".into(),
        (true, false) => "本页设置 set here".into(),
        (false, true) => "config.toml".into(),
        (false, false) => "未设置 not set".into(),
    }
}

/// One phone's section from its store.
#[allow(clippy::too_many_arguments)]
fn phone_settings(
    i: usize,
    w: &ConsoleWorker,
    s: &Settings,
    op: &OperatorSettings,
    live_note: Option<String>,
    shown: &Shown,
) -> PhoneSettings {
    let failed = shown.failed.as_ref().filter(|(f, _)| f.worker == i);
    let live_failed = shown.live_failed.as_ref().filter(|(f, _)| f.worker == i);
    // What the fields show: the submitted values after a refusal (never the token),
    // else the saved ones.
    let (name, admin_url, device_text) = match failed {
        Some((f, _)) => (f.name.clone(), f.admin_url.clone(), f.device_text.clone()),
        None => (
            s.name.clone().unwrap_or_default(),
            s.admin_url.clone().unwrap_or_default(),
            String::new(),
        ),
    };
    let registration = match &s.registration {
        Some(r) if r.state == "ok" => RegistrationLine {
            class: "ok",
            zh: "已注册".into(),
            en: format!("registered at {}", r.at),
        },
        Some(r) if r.state == "pending" => RegistrationLine {
            class: "warn",
            zh: "注册中".into(),
            en: format!("pending (since {}; reload)", r.at),
        },
        Some(r) => RegistrationLine {
            class: "bad",
            zh: "失败".into(),
            en: format!(
                "{} at {}: {}",
                r.state,
                r.at,
                r.error.as_deref().unwrap_or("-")
            ),
        },
        None => RegistrationLine {
            class: "warn",
            zh: "未注册".into(),
            en: "never registered".into(),
        },
    };
    let cfg = &w.config;
    let address = op.expected_address_or(&cfg.expected_address);
    let console_address = op.expected_address.as_ref().is_some_and(|a| !a.is_empty());
    let goods = op
        .self_test_goods_id
        .clone()
        .or_else(|| cfg.self_test_goods_id.clone())
        .unwrap_or_default();
    let dry_run = cfg.dry_run || op.dry_run();
    let mode_source = match (cfg.dry_run, op.dry_run()) {
        (true, _) => {
            "config.toml / --dry-run-only（本页不能放宽 cannot be widened here）".to_string()
        }
        (false, true) => "本页设置 set here".to_string(),
        (false, false) if cfg.allow_live => {
            "config.toml: auto + allow_live（无需自检 no self-test needed）".to_string()
        }
        (false, false) => "config.toml: auto（自检通过后 once the self-test passed）".to_string(),
    };
    let (address_text, goods_text, mode_dry_run) = match live_failed {
        Some((f, _)) => (
            f.expected_address.clone(),
            f.self_test_goods_id.clone(),
            f.purchase_mode == "dry_run",
        ),
        None => (
            op.expected_address.clone().unwrap_or_default().join("\n"),
            op.self_test_goods_id.clone().unwrap_or_default(),
            op.dry_run(),
        ),
    };
    PhoneSettings {
        i,
        label: w.label.clone(),
        client_id: s.client_id.clone(),
        store_error: None,
        just_saved: shown.saved == Some(i),
        errors: failed.map(|(_, e)| e.clone()).unwrap_or_default(),
        registration,
        name,
        admin_url,
        has_token: s.token.is_some(),
        device: s.device.clone().unwrap_or_default(),
        device_text,
        live_saved: shown.live_saved == Some(i),
        live_errors: live_failed.map(|(_, e)| e.clone()).unwrap_or_default(),
        mode: Effective {
            value: if dry_run { "dry_run" } else { "auto" }.into(),
            source: mode_source,
        },
        mode_dry_run,
        address: Effective {
            value: address.join(" + "),
            source: source(console_address, !cfg.expected_address.is_empty()),
        },
        goods: Effective {
            value: goods,
            source: source(
                op.self_test_goods_id.is_some(),
                cfg.self_test_goods_id.is_some(),
            ),
        },
        address_text,
        goods_text,
        live_note,
    }
}

async fn page(state: &ConsoleState, shown: Shown, status: StatusCode) -> Response {
    let workers = state.workers.clone();
    let server = state.adb_server;
    type Read = Result<(Settings, OperatorSettings, Option<String>), String>;
    let read = tokio::task::spawn_blocking(move || {
        let stores: Vec<Read> = workers
            .iter()
            .map(|w| {
                let s = &w.store;
                Ok((
                    s.settings().map_err(|e| e.to_string())?,
                    s.operator_settings().map_err(|e| e.to_string())?,
                    s.self_test_note().map_err(|e| e.to_string())?,
                ))
            })
            .collect();
        let listed = server.map(|s| list_devices(s, ADB_LIST_DEADLINE).map_err(|e| e.to_string()));
        (stores, listed)
    })
    .await;
    let Ok((stores, listed)) = read else {
        return super::status::store_error("the settings read failed");
    };
    let mut phones = Vec::new();
    for (i, r) in stores.iter().enumerate() {
        let Some(w) = state.worker(i) else { continue };
        match r {
            Ok((s, op, note)) => phones.push(phone_settings(i, w, s, op, note.clone(), &shown)),
            Err(e) => phones.push(PhoneSettings {
                i,
                label: w.label.clone(),
                client_id: "-".into(),
                store_error: Some(e.clone()),
                just_saved: false,
                errors: Vec::new(),
                registration: RegistrationLine {
                    class: "bad",
                    zh: String::new(),
                    en: String::new(),
                },
                name: String::new(),
                admin_url: String::new(),
                has_token: false,
                device: String::new(),
                device_text: String::new(),
                live_saved: false,
                live_errors: Vec::new(),
                mode: Effective {
                    value: String::new(),
                    source: String::new(),
                },
                mode_dry_run: false,
                address: Effective {
                    value: String::new(),
                    source: String::new(),
                },
                goods: Effective {
                    value: String::new(),
                    source: String::new(),
                },
                address_text: String::new(),
                goods_text: String::new(),
                live_note: None,
            }),
        }
    }
    let (listed, listed_note) = match listed {
        Some(Ok(list)) if list.is_empty() => {
            (list, Some("the adb server lists no phone".to_string()))
        }
        Some(Ok(list)) => (list, None),
        Some(Err(e)) => (Vec::new(), Some(format!("adb: {e}"))),
        None => (Vec::new(), None),
    };
    let console_hooks = stores
        .first()
        .and_then(|r| r.as_ref().ok())
        .map(|(_, op, _)| console_hooks(op).1)
        .unwrap_or_default()
        .into_iter()
        .map(|h| HookRow {
            id: h.id.clone(),
            label: h.label.clone(),
            format: h.format.as_str().to_string(),
        })
        .collect();
    let stored_password = stores
        .first()
        .and_then(|r| r.as_ref().ok())
        .is_some_and(|(_, op, _)| op.console_password_hash.is_some());
    let mut r = render(&SettingsPage {
        shell: Shell::new(Tab::Settings, "设置 Settings", false),
        csrf: state.csrf(),
        phones,
        listed,
        listed_note,
        config_hooks: state
            .config_webhooks
            .iter()
            .map(|h| HookRow {
                id: h.id.clone(),
                label: h.label.clone(),
                format: h.format.to_string(),
            })
            .collect(),
        console_hooks,
        webhook_saved: shown.webhook_saved,
        webhook_error: shown.webhook_error,
        has_password: state.has_password(),
        password_source: if stored_password {
            "本页设置 set here"
        } else {
            "config.toml / CMAUTOBUY_CONSOLE_PASSWORD / --console-password"
        },
        password_saved: shown.password_saved,
        password_error: shown.password_error,
        min_password: super::listen::MIN_PASSWORD_CHARS,
    });
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(name: &str, url: &str) -> SettingsForm {
        SettingsForm {
            name: name.into(),
            admin_url: url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn names_are_checked_as_the_admin_checks_them() {
        assert!(validate(&form("shop-1", "http://a:8080")).is_ok());
        let fifty = "店".repeat(50);
        assert!(validate(&form(&fifty, "http://a")).is_ok());
        let e = validate(&form(&"店".repeat(51), "http://a")).unwrap_err();
        assert_eq!(e[0].0, "name");
        assert!(validate(&form("a\u{7}b", "http://a")).is_err());
        assert!(validate(&form("  ", "http://a")).is_err());
    }

    #[test]
    fn urls_tokens_and_devices() {
        assert!(validate(&form("x", "ftp://a")).is_err());
        assert!(validate(&form("x", "not a url")).is_err());
        // The mistakes operators make, refused at input with the URL to write instead.
        let e = validate(&form("x", "127.0.0.1:18080")).unwrap_err();
        assert_eq!(e[0].0, "admin_url");
        assert!(e[0].1.contains("http://127.0.0.1:18080"), "{}", e[0].1);
        let e = validate(&form("x", "http://admin.example/api/v1")).unwrap_err();
        assert!(e[0].1.contains("http://admin.example"), "{}", e[0].1);
        let mut f = form("x", "https://admin.example");
        f.token = "  ".into();
        assert!(
            validate(&f).unwrap().token.is_none(),
            "empty keeps the token"
        );
        f.token = "abc def".into();
        assert!(validate(&f).is_err());
        f.token = "abc".into();
        assert_eq!(validate(&f).unwrap().token.unwrap().expose(), "abc");
        f.device_pick = "emulator-5554".into();
        assert_eq!(
            validate(&f).unwrap().device.as_deref(),
            Some("emulator-5554")
        );
        f.device_text = "tcp:10.0.0.2:5555".into();
        assert_eq!(
            validate(&f).unwrap().device.as_deref(),
            Some("tcp:10.0.0.2:5555")
        );
        f.device_text = "tcp:10.0.0.2".into();
        assert!(validate(&f).is_err());
    }

    #[test]
    fn the_going_live_form_is_checked() {
        let f = |addr: &str, goods: &str, mode: &str| LiveForm {
            worker: 0,
            expected_address: addr.into(),
            self_test_goods_id: goods.into(),
            purchase_mode: mode.into(),
        };
        let p = validate_live(&f(
            " 张三 \r\n\n广东省深圳市南山区科技园路1号\n",
            "602938475610",
            "auto",
        ))
        .unwrap();
        assert_eq!(
            p.expected_address,
            Some(vec![
                "张三".to_string(),
                "广东省深圳市南山区科技园路1号".to_string()
            ])
        );
        assert_eq!(p.self_test_goods_id.as_deref(), Some("602938475610"));
        assert_eq!(p.purchase_mode, None);
        // Empty: cleared (the configuration's holds).
        let p = validate_live(&f(" \n", "", "dry_run")).unwrap();
        assert_eq!((p.expected_address, p.self_test_goods_id), (None, None));
        assert_eq!(p.purchase_mode, Some("dry_run"));
        for (bad, field) in [
            (
                f("a\nb\nc\nd\ne\nf\ng\nh\ni", "", "auto"),
                "expected_address",
            ),
            (f(&"长".repeat(121), "", "auto"), "expected_address"),
            (f("a\u{7}", "", "auto"), "expected_address"),
            (f("", "12ab", "auto"), "self_test_goods_id"),
            (f("", "", "live"), "purchase_mode"),
        ] {
            let e = validate_live(&bad).unwrap_err();
            assert_eq!(e[0].0, field);
        }
    }
}
