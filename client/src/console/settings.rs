//! 设置 Settings (`/settings`): per worker the client's name, Admin URL, token and phone.
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

use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use serde::Deserialize;

use super::layout::{escape, page, Tab};
use super::state::ConsoleState;
use crate::device::adb::{list_devices, ListedDevice};
use crate::registration;
use crate::secret::Secret;
use crate::store::{Settings, SettingsPatch};

/// How long the settings page waits for the adb server's device list.
pub const ADB_LIST_DEADLINE: Duration = Duration::from_secs(3);

/// `/settings` (GET the form, POST a save).
pub fn routes() -> Router<ConsoleState> {
    Router::new().route("/settings", get(settings_page).post(save))
}

#[derive(Deserialize, Default)]
struct PageQuery {
    #[serde(default)]
    saved: Option<usize>,
}

/// The form's fields (the token never comes back from the page).
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

/// What a valid form changes.
pub fn validate(f: &SettingsForm) -> Result<SettingsPatch, Vec<(&'static str, String)>> {
    let mut errors = Vec::new();
    let name = f.name.trim();
    if name.is_empty() {
        errors.push(("name", "名称必填 a name is required".to_string()));
    } else if let Err(v) = cmautobuy_contract::validate::client_name(name) {
        errors.push(("name", format!("名称无效 {v}")));
    }
    let url = f.admin_url.trim();
    match reqwest::Url::parse(url) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => {}
        _ => errors.push((
            "admin_url",
            "Admin 地址无效 the Admin URL must be http(s)://HOST[:PORT]".to_string(),
        )),
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

async fn settings_page(State(state): State<ConsoleState>, q: Query<PageQuery>) -> Response {
    render(&state, q.saved, None, StatusCode::OK).await
}

async fn save(State(state): State<ConsoleState>, Form(f): Form<SettingsForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let patch = match validate(&f) {
        Ok(p) => p,
        Err(errors) => {
            return render(
                &state,
                None,
                Some((f, errors)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
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
    Redirect::to(&format!("/settings?saved={}", f.worker)).into_response()
}

async fn render(
    state: &ConsoleState,
    saved: Option<usize>,
    failed: Option<(SettingsForm, Vec<(&'static str, String)>)>,
    status: StatusCode,
) -> Response {
    let workers = state.workers.clone();
    let server = state.adb_server;
    let read = tokio::task::spawn_blocking(move || {
        let settings: Vec<Result<Settings, String>> = workers
            .iter()
            .map(|w| w.store.settings().map_err(|e| e.to_string()))
            .collect();
        let listed = server.map(|s| list_devices(s, ADB_LIST_DEADLINE).map_err(|e| e.to_string()));
        (settings, listed)
    })
    .await;
    let Ok((settings, listed)) = read else {
        return super::status::store_error("the settings read failed");
    };
    let mut body = String::from("<h1>设置 <span class=\"en\">Settings</span></h1>");
    for (i, s) in settings.iter().enumerate() {
        let label = state.worker(i).map(|w| w.label.as_str()).unwrap_or("-");
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                body.push_str(&format!(
                    "<p class=\"bad\">store unavailable: {}</p>",
                    escape(e)
                ));
                continue;
            }
        };
        let this_failed = failed.as_ref().filter(|(f, _)| f.worker == i);
        body.push_str(&worker_form(
            state,
            i,
            label,
            s,
            listed.as_ref(),
            saved == Some(i),
            this_failed,
        ));
    }
    let mut r = page(Tab::Settings, "设置 Settings", &body, false).into_response();
    *r.status_mut() = status;
    r
}

fn worker_form(
    state: &ConsoleState,
    i: usize,
    label: &str,
    s: &Settings,
    listed: Option<&Result<Vec<ListedDevice>, String>>,
    just_saved: bool,
    failed: Option<&(SettingsForm, Vec<(&'static str, String)>)>,
) -> String {
    let err = |field: &str| -> String {
        failed
            .map(|(_, es)| {
                es.iter()
                    .filter(|(f, _)| *f == field)
                    .map(|(_, m)| format!("<span class=\"error\">{}</span>", escape(m)))
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    // What the fields show: the submitted values after a refusal (never the token),
    // else the saved ones.
    let (name, url, device_text) = match failed {
        Some((f, _)) => (f.name.clone(), f.admin_url.clone(), f.device_text.clone()),
        None => (
            s.name.clone().unwrap_or_default(),
            s.admin_url.clone().unwrap_or_default(),
            String::new(),
        ),
    };
    let current_device = s.device.clone().unwrap_or_default();
    let mut h = format!(
        "<section class=\"worker\" id=\"settings-w{i}\"><h2>📱 {} <span class=\"en\">client id <code>{}</code></span></h2>",
        escape(label),
        escape(&s.client_id)
    );
    if just_saved {
        h.push_str("<p class=\"ok\">已保存 <span class=\"en\">saved locally; registering with the Admin in the background (claims use the new Admin URL, token and phone after the client restarts)</span></p>");
    }
    if failed.is_some() {
        h.push_str("<p class=\"error\">未保存 <span class=\"en\">not saved: see the fields below</span></p>");
    }
    h.push_str(&format!(
        "<p id=\"registration-w{i}\">注册 <span class=\"en\">registration:</span> {}</p>",
        registration_line(s)
    ));
    h.push_str(&format!(
        "<form method=\"post\" action=\"/settings\">{csrf}<input type=\"hidden\" name=\"worker\" value=\"{i}\">\
<label for=\"name-{i}\">客户端名称 <span class=\"en\">Client name (≤ 50 characters)</span></label>\
<input type=\"text\" id=\"name-{i}\" name=\"name\" value=\"{name}\" maxlength=\"50\" required> {e_name}\
<label for=\"admin-{i}\">Admin 地址 <span class=\"en\">Admin URL</span></label>\
<input type=\"url\" id=\"admin-{i}\" name=\"admin_url\" value=\"{url}\" required> {e_url}\
<label for=\"token-{i}\">令牌 <span class=\"en\">Token — {token_state}; leave empty to keep it</span></label>\
<input type=\"password\" id=\"token-{i}\" name=\"token\" value=\"\" autocomplete=\"new-password\"> {e_token}",
        csrf = state.csrf_field(),
        name = escape(&name),
        url = escape(&url),
        token_state = if s.token.is_some() {
            "已保存 a token is saved"
        } else {
            "未设置 none saved"
        },
        e_name = err("name"),
        e_url = err("admin_url"),
        e_token = err("token"),
    ));
    h.push_str(&format!(
        "<label for=\"pick-{i}\">设备 <span class=\"en\">Phone (now: {})</span></label><select id=\"pick-{i}\" name=\"device_pick\">",
        escape(if current_device.is_empty() { "-" } else { &current_device })
    ));
    h.push_str(&format!(
        "<option value=\"{v}\" selected>{shown}</option>",
        v = escape(&current_device),
        shown = if current_device.is_empty() {
            "— 未选择 none —".to_string()
        } else {
            format!("{} (当前 current)", escape(&current_device))
        }
    ));
    let mut note = String::new();
    match listed {
        Some(Ok(list)) => {
            for d in list.iter().filter(|d| d.serial != current_device) {
                h.push_str(&format!(
                    "<option value=\"{v}\">{v} — {state} {model}</option>",
                    v = escape(&d.serial),
                    state = escape(&d.state),
                    model = escape(&d.model)
                ));
            }
            if list.is_empty() {
                note = "<span class=\"en\">the adb server lists no phone</span>".into();
            }
        }
        Some(Err(e)) => note = format!("<span class=\"warn\">adb: {}</span>", escape(e)),
        None => {}
    }
    h.push_str(&format!(
        "</select> {note}\
<label for=\"text-{i}\">或输入 <span class=\"en\">or type a serial or tcp:HOST:PORT</span></label>\
<input type=\"text\" id=\"text-{i}\" name=\"device_text\" value=\"{dt}\" placeholder=\"tcp:192.168.1.20:5555\"> {e_dev}\
<p><button type=\"submit\">保存并注册 Save and register</button></p></form></section>",
        dt = escape(&device_text),
        e_dev = err("device"),
    ));
    h
}

fn registration_line(s: &Settings) -> String {
    match &s.registration {
        Some(r) if r.state == "ok" => format!(
            "<span class=\"ok\">已注册 registered at {}</span>",
            escape(&r.at)
        ),
        Some(r) if r.state == "pending" => format!(
            "<span class=\"warn\">注册中 pending (since {}; reload)</span>",
            escape(&r.at)
        ),
        Some(r) => format!(
            "<span class=\"bad\">失败 {} at {}: {}</span>",
            escape(&r.state),
            escape(&r.at),
            escape(r.error.as_deref().unwrap_or("-"))
        ),
        None => "<span class=\"warn\">未注册 never registered</span>".into(),
    }
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
}
