//! `doctor`'s checks, run: the adb server and the phone (when one is configured — its
//! absence is a failed `device` check, never a reason to skip the rest), the
//! configuration, the data directory (writable, free space, the store's schema and
//! integrity) and the Admin (reachable, the token accepted by the idempotent §4.1
//! `PUT /registration` declaring what a claim would, the clock against its `Date`), then
//! the live verdict's inputs.
//!
//! Nothing is saved: the Admin URL, token, name and device a check uses are the saved
//! ones with the configuration (and `doctor`'s flags) over them, by the save's own rules
//! ([`setup::effective_settings`]); the store's settings and registration are left as
//! they were. (On a data directory without a store the store is created, as the first
//! `run` would: the registration probe needs the client id it keeps.)

use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{
    backend_check, data_dir_check, device_checks, disk_check, Check, LiveInputs, PhoneSection,
    Report, SeveralReport,
};
use crate::app::device::{self, Target};
use crate::app::error::LaunchError;
use crate::app::setup;
use crate::config::{Config, ConfigError, Origin, PurchaseMode};
use crate::device::adb::{list_devices, server_version};
use crate::device::doctor::{check_with, DoctorReport};
use crate::device::{AdbDevice, DeviceAddress};
use crate::disk_budget::{DiskProbe, SystemDisk};
use crate::gateway::{AdminGateway, GatewayError};
use crate::store::{Settings, Store, TokenBinding};
use cmautobuy_contract::AdminErrorCode;

/// What `doctor` was given besides the configuration.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--device` (repeated: one section per phone).
    pub devices: Vec<String>,
    /// `--adb-server HOST:PORT`.
    pub adb_server: Option<String>,
    /// `--adb-key FILE`.
    pub adb_key: Option<PathBuf>,
}

/// The report: one phone (or none), or several.
pub enum Outcome {
    One(Box<Report>),
    Several(SeveralReport),
}

impl Outcome {
    /// Every check passed (exit 0).
    pub fn ready(&self) -> bool {
        match self {
            Outcome::One(r) => r.ready,
            Outcome::Several(r) => r.ready,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Outcome::One(r) => r.to_json(),
            Outcome::Several(r) => r.to_json(),
        }
    }

    pub fn render_text(&self) -> String {
        match self {
            Outcome::One(r) => r.render_text(),
            Outcome::Several(r) => r.render_text(),
        }
    }
}

/// How long the adb server may take to say its version and list its devices.
const ADB_SERVER_DEADLINE: Duration = Duration::from_secs(5);

/// `config`: the file read, or why the configuration did not load (`refused`; the other
/// checks then ran on the layers that did).
pub fn config_check(cfg: &Config, refused: Option<&ConfigError>) -> Check {
    match refused {
        None => Check::pass(
            "config",
            match &cfg.file {
                Some(f) => format!("{} read", f.display()),
                None => "no config file: defaults, environment and flags".into(),
            },
        ),
        Some(e) => {
            let fix = match e {
                ConfigError::Parse { path, line, .. } => {
                    format!("fix line {line} of {}", path.display())
                }
                ConfigError::UnknownKey {
                    origin, suggestion, ..
                } => match suggestion {
                    Some(s) => format!("write `{s}` at {origin} (or remove the line)"),
                    None => format!(
                        "remove the key at {origin} (see the configuration table of the guide)"
                    ),
                },
                ConfigError::Value {
                    origin: Some(Origin::Env(var)),
                    ..
                } => format!("fix or unset {var}"),
                ConfigError::Value {
                    name,
                    origin: Some(o),
                    ..
                } => format!("fix {name} at {o}"),
                _ => "fix the configuration as the message says".into(),
            };
            Check::fail(
                "config",
                format!("{e} (the other checks ran without it)"),
                fix,
            )
        }
    }
}

/// Runs every check on `cfg` (with `config`, the configuration's own check, among them).
pub fn run(cfg: &Config, config: Check, opts: &Options) -> Result<Outcome, LaunchError> {
    if opts.devices.len() > 1 || (opts.devices.is_empty() && cfg.devices.len() > 1) {
        return several(cfg, config, opts).map(Outcome::Several);
    }
    let target = device::resolve(
        cfg,
        opts.devices.first().map(String::as_str),
        || device::saved_if_any(cfg),
        opts.adb_server.as_deref(),
        opts.adb_key.as_deref(),
    )?;
    let mut checks = Vec::new();
    let (phone, backend) = phone_checks(cfg, target.as_ref(), opts, &mut checks)?;
    checks.push(config);
    checks.extend(host_checks(cfg));
    let (store_check, store) = store_check(cfg);
    checks.push(store_check);
    let settings = store.as_ref().map(|s| setup::effective_settings(cfg, s));
    checks.extend(match (&store, &settings) {
        (Some(store), Some(Ok((s, b)))) => admin_checks(cfg, store, s, b),
        (Some(_), Some(Err(e))) => vec![Check::fail(
            "admin",
            format!("not checked: {e}"),
            "fix what the message says",
        )],
        _ => vec![store_first("admin")],
    });
    let live = match (&store, &settings) {
        (Some(store), Some(Ok((s, _)))) => live_inputs(
            cfg,
            store,
            s,
            target.as_ref().map(|t| t.serial.as_str()),
            phone.as_ref().and_then(|p| p.pdd_version.as_deref()),
        )?,
        _ => LiveInputs {
            identity: Some("the store did not open".into()),
            ..LiveInputs::default()
        },
    };
    Ok(Outcome::One(Box::new(
        Report::new(checks, &live, phone).with_backend(backend),
    )))
}

/// The checks that need neither phone nor store: the data directory and its disk.
fn host_checks(cfg: &Config) -> Vec<Check> {
    vec![
        data_dir_check(&cfg.data_dir),
        disk_check(
            &cfg.data_dir,
            SystemDisk.free_bytes(&cfg.data_dir),
            cfg.resources.min_free_disk_bytes,
        ),
    ]
}

fn store_first(name: &str) -> Check {
    Check::fail(
        name,
        "not checked: the store did not open",
        "fix the store check first",
    )
}

/// The adb server and the phone `target` (none: a failed `device` check, the adb server
/// at its default address still checked), into `checks`; what the phone showed and the
/// device backend's probe, when it answered.
fn phone_checks(
    cfg: &Config,
    target: Option<&Target>,
    opts: &Options,
    checks: &mut Vec<Check>,
) -> Result<
    (
        Option<DoctorReport>,
        Option<crate::device::backend::BackendProbe>,
    ),
    LaunchError,
> {
    let Some(t) = target else {
        // Which serials the adb server lists helps to pick one; an adb server that does
        // not run is no fault while no phone needs it.
        let server = device::adb_server(opts.adb_server.as_deref())?;
        let listing = adb_server_checks(Some(server));
        if listing.iter().all(|c| c.ok) {
            checks.extend(listing);
        } else {
            checks.push(Check::pass(
                "adb_server",
                format!("skipped: no device configured, and no adb server answers at {server}"),
            ));
        }
        checks.push(Check::fail(
            "device",
            "no device configured",
            "give the phone: --device SERIAL (an adb serial, HOST:PORT or tcp:HOST:PORT), or device in the config file / CMAUTOBUY_DEVICE; `adb devices` lists the serials",
        ));
        return Ok((None, None));
    };
    // The phone first (a `host:port` serial is `adb connect`ed by its check), then the
    // adb server's version and listing; shown server first.
    let dev = match AdbDevice::open(t.addr.clone(), t.options.clone()) {
        Ok(d) => Arc::new(d),
        Err(e) => {
            checks.extend(adb_server_checks(server_of(&t.addr)));
            checks.push(Check::fail(
                "device",
                format!("{}: {e}", t.serial),
                "fix what the message says (for tcp: phones, the key file: --adb-key FILE), then run doctor again",
            ));
            return Ok((None, None));
        }
    };
    let phone = check_with(&dev, cfg.device_thresholds);
    checks.extend(adb_server_checks(server_of(&t.addr)));
    checks.extend(device_checks(&phone));
    // The device backend `run` would use, with one timed dump.
    let backend = (phone.state == "device")
        .then(|| crate::device::backend::probe(&dev, cfg.device_backend, cfg.u2_jar.as_deref()));
    checks.extend(backend.as_ref().map(backend_check));
    Ok((Some(phone), backend))
}

fn server_of(addr: &DeviceAddress) -> Option<SocketAddrV4> {
    match addr {
        DeviceAddress::Server { server, .. } => Some(*server),
        DeviceAddress::Tcp(_) => None,
    }
}

/// `doctor` with several phones ([`crate::phones`], the layout `run` uses): the
/// configuration, the data directory, the root store and the Admin once — the token
/// probe registers the root store's identity only, declaring what that store's claim
/// would (the phone stores' registrations are left as they are) —, then per phone its
/// device checks, its store and its live verdict (from that phone's store).
fn several(cfg: &Config, config: Check, opts: &Options) -> Result<SeveralReport, LaunchError> {
    let mut cfg = cfg.clone();
    if opts.devices.len() > 1 {
        cfg.devices = opts.devices.clone();
        cfg.device = None;
    }
    let cfg = &cfg;
    let adb_key = opts
        .adb_key
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join("adbkey"));
    let mut host = vec![config];
    host.extend(host_checks(cfg));
    let phones = setup::phone_configs(cfg)?;
    // The root store as `run` would open it: as its phone's when one of these phones
    // has it (its name and declared profile are that phone's); else with no device or
    // name given (the layout decides those).
    let root_pc = phones
        .iter()
        .find(|(_, pc)| pc.data_dir == cfg.data_dir)
        .map(|(_, pc)| pc.clone())
        .unwrap_or_else(|| {
            let mut c = cfg.clone();
            c.device = None;
            c.devices = Vec::new();
            c.name = None;
            c
        });
    let (root_check, root_store) = store_check(&root_pc);
    host.push(root_check);
    match &root_store {
        Some(store) => match setup::effective_settings(&root_pc, store) {
            Ok((s, b)) => host.extend(admin_checks(&root_pc, store, &s, &b)),
            Err(e) => host.push(Check::fail(
                "admin",
                format!("not checked: {e}"),
                "fix what the message says",
            )),
        },
        None => host.push(store_first("admin")),
    }
    let mut server_checked = false;
    let mut read = Vec::new();
    for (serial, pc) in &phones {
        let target = device::resolve(
            pc,
            Some(serial),
            || None,
            opts.adb_server.as_deref(),
            Some(&adb_key),
        )?
        .ok_or_else(|| LaunchError::usage(format!("no device {serial}")))?;
        let mut checks = Vec::new();
        let (phone, _) = phone_checks(pc, Some(&target), opts, &mut checks)?;
        // The adb server's checks go to the host's, once (after the phone's check: a
        // `host:port` serial is `adb connect`ed by it).
        let (server, own): (Vec<Check>, Vec<Check>) = checks
            .into_iter()
            .partition(|c| c.name == "adb_server" || c.name == "adb_devices");
        if !server_checked && server_of(&target.addr).is_some() {
            host.splice(0..0, server);
            server_checked = true;
        }
        let mut checks = own;
        let (sc, store) = if pc.data_dir == cfg.data_dir {
            // The root store, already checked above.
            (None, root_store.clone())
        } else {
            let (c, s) = store_check(pc);
            (Some(c), s)
        };
        checks.extend(sc);
        let settings = store.as_ref().map(|s| setup::effective_settings(pc, s));
        let live = match (&store, &settings) {
            (Some(store), Some(Ok((s, _)))) => live_inputs(
                pc,
                store,
                s,
                Some(serial),
                phone.as_ref().and_then(|p| p.pdd_version.as_deref()),
            )?,
            _ => LiveInputs {
                identity: Some("the store did not open".into()),
                ..LiveInputs::default()
            },
        };
        read.push((serial.clone(), checks, live, phone));
    }
    if !server_checked {
        host.insert(
            0,
            Check::pass(
                "adb_server",
                "skipped: every phone is reached directly (tcp:), not through an adb server",
            ),
        );
    }
    let sections = read
        .into_iter()
        .map(|(serial, checks, live, phone)| PhoneSection::new(serial, &host, checks, &live, phone))
        .collect();
    Ok(SeveralReport::new(host, sections))
}

/// `adb_server` (its version) and `adb_devices` (what it lists; an unauthorized phone
/// fails), or `adb_server` skipped for a direct `tcp:` phone (`None`).
fn adb_server_checks(server: Option<SocketAddrV4>) -> Vec<Check> {
    let Some(server) = server else {
        return vec![Check::pass(
            "adb_server",
            "skipped: the phone is reached directly (tcp:), not through an adb server",
        )];
    };
    let mut out = Vec::new();
    match server_version(server, ADB_SERVER_DEADLINE)
        .and_then(|v| Ok((v, list_devices(server, ADB_SERVER_DEADLINE)?)))
    {
        Ok((version, devices)) => {
            out.push(Check::pass(
                "adb_server",
                format!("{server}: adb server version {version}"),
            ));
            let listed: Vec<String> = devices
                .iter()
                .map(|d| format!("{} ({})", d.serial, d.state))
                .collect();
            let unauthorized: Vec<&str> = devices
                .iter()
                .filter(|d| d.state == "unauthorized")
                .map(|d| d.serial.as_str())
                .collect();
            let detail = if listed.is_empty() {
                "no device listed".to_string()
            } else {
                format!("{} listed: {}", listed.len(), listed.join(", "))
            };
            out.push(if unauthorized.is_empty() {
                Check::pass("adb_devices", detail)
            } else {
                Check::fail(
                    "adb_devices",
                    detail,
                    format!(
                        "accept the USB debugging (RSA key) prompt on {} (tick \"always allow\")",
                        unauthorized.join(", ")
                    ),
                )
            });
        }
        Err(e) => out.push(Check::fail(
            "adb_server",
            format!("{server}: {e}"),
            "start the adb server: `adb start-server` (or give its address with --adb-server HOST:PORT)",
        )),
    }
    out
}

/// `store`: the store opens (created when new, as `run` would) at the current schema and
/// SQLite finds it whole (`quick_check`). Nothing is saved to it.
fn store_check(cfg: &Config) -> (Check, Option<Store>) {
    let store = match setup::open_store(cfg) {
        Ok(s) => s,
        Err(e) => {
            return (
                Check::fail(
                    "store",
                    e.to_string(),
                    format!(
                        "fix what the message says (a newer client's store needs that client; a damaged one: restore from {}/backups/)",
                        cfg.data_dir.display()
                    ),
                ),
                None,
            )
        }
    };
    let path = store.path().display().to_string();
    let check = match (store.schema_version(), store.quick_check()) {
        (Ok((v, current)), Ok(())) if v == current => Check::pass(
            "store",
            format!("{path}: schema version {v} (current), intact"),
        ),
        (Ok((v, current)), Ok(())) => Check::fail(
            "store",
            format!("{path}: schema version {v}, current {current}"),
            "run any command of this version once to migrate it (a backup is made first)",
        ),
        (Err(e), _) | (_, Err(e)) => Check::fail(
            "store",
            format!("{path}: {e}"),
            "restore the store from <data dir>/backups/ or move it aside",
        ),
    };
    (check, Some(store))
}

const TOKEN_FIX: &str = "give the token the Admin issued for this client: `cmautobuy-client doctor --token T` or `register --token T` (or CMAUTOBUY_TOKEN / token in the config file)";

/// `admin` (reachable), `token` (accepted) and `clock` (skew against the answer's `Date`):
/// one idempotent §4.1 `PUT /registration` declaring exactly what a claim would, with
/// `settings` (the saved ones with the configuration over them; nothing is saved).
fn admin_checks(
    cfg: &Config,
    store: &Store,
    settings: &Settings,
    binding: &TokenBinding,
) -> Vec<Check> {
    let Some(url) = settings.admin_url.clone().filter(|u| !u.is_empty()) else {
        return vec![Check::fail(
            "admin",
            "not configured",
            "give the Admin's URL: --admin URL (or admin_url in the config file / CMAUTOBUY_ADMIN_URL)",
        )];
    };
    if let Err(e) = crate::config::check_admin_url(&url) {
        return vec![Check::fail(
            "admin",
            e.to_string(),
            format!(
                "write {} (--admin, admin_url or CMAUTOBUY_ADMIN_URL)",
                e.fix
            ),
        )];
    }
    if settings.token.is_none() && *binding == TokenBinding::NoToken {
        return vec![
            Check::pass("admin", format!("{url}: not contacted (no token)")),
            Check::fail("token", "not configured", TOKEN_FIX),
        ];
    }
    let gw = match setup::gateway_for(cfg, settings, binding) {
        Ok(gw) => gw,
        Err(e) => {
            return vec![Check::fail(
                "token",
                e.to_string(),
                "give the token again for this Admin: --token T (with --admin URL)",
            )]
        }
    };
    let profile = match setup::declared_profile_for(cfg, store, settings) {
        Ok(p) => p,
        Err(e) => {
            return vec![Check::fail(
                "admin",
                format!("cannot compute the registration: {e}"),
                "fix the store check first",
            )]
        }
    };
    let rt = match setup::runtime() {
        Ok(rt) => rt,
        Err(e) => return vec![Check::fail("admin", e.to_string(), "run doctor again")],
    };
    // The gateway bounds the connection and the answer; this bounds the whole call too.
    let limit = cfg.connect_timeout + cfg.request_timeout + Duration::from_secs(1);
    let answer =
        rt.block_on(async { tokio::time::timeout(limit, gw.register_client(&profile)).await });
    let unreachable_fix = format!(
        "check that the Admin runs and answers at {url} (network, firewall), or fix admin_url / --admin URL"
    );
    let mut out = Vec::new();
    match answer {
        Err(_) => out.push(Check::fail(
            "admin",
            format!("{url}: no answer within {limit:?}"),
            unreachable_fix,
        )),
        Ok(Ok(r)) if r.registered => {
            out.push(Check::pass(
                "admin",
                format!(
                    "{url}: reachable, registered (declaring purchase_mode {})",
                    profile.capabilities.purchase_mode.as_str()
                ),
            ));
            out.push(Check::pass("token", "accepted"));
        }
        Ok(Ok(_)) => {
            out.push(Check::pass("admin", format!("{url}: reachable")));
            out.push(Check::fail(
                "token",
                "the Admin answered registered=false",
                "ask the Admin's operator why this client id is refused; then `cmautobuy-client register`",
            ));
        }
        Ok(Err(e)) => match &e {
            GatewayError::Timeout { .. } | GatewayError::Transport { .. } => {
                out.push(Check::fail("admin", format!("{url}: {e}"), unreachable_fix))
            }
            GatewayError::Rejected { status, code, .. }
                if *status == 401
                    || *status == 403
                    || *code == Some(AdminErrorCode::Unauthorized) =>
            {
                out.push(Check::pass("admin", format!("{url}: reachable")));
                out.push(Check::fail("token", e.to_string(), TOKEN_FIX));
            }
            GatewayError::Rejected { .. } | GatewayError::NotAccepted { .. } => {
                out.push(Check::pass("admin", format!("{url}: reachable")));
                out.push(Check::fail(
                    "registration",
                    e.to_string(),
                    "read the Admin's message above; `cmautobuy-client register` sends the same registration",
                ));
            }
            GatewayError::Malformed { .. }
            | GatewayError::Cut { .. }
            | GatewayError::TooLarge { .. }
            | GatewayError::Config(_) => out.push(Check::fail(
                "admin",
                format!("{url}: {e}"),
                "check that admin_url / --admin URL is the Admin's base URL (not a page or a proxy's error)",
            )),
        },
    }
    // Any answer carried a `Date` header: the skew the runner would measure.
    if out.iter().any(|c| c.name == "admin" && c.ok) {
        out.push(match gw.admin_clock_offset_ms() {
            None => Check::pass("clock", "the Admin's answer had no Date header: skew not measured"),
            Some(ms) => {
                let max = cfg.max_clock_skew;
                let o = crate::clock_check::Offsets {
                    admin_ms: Some(ms),
                    phone_ms: None,
                };
                match crate::clock_check::too_far(max, &o) {
                    None => Check::pass(
                        "clock",
                        format!("{ms:+} ms from the Admin's (limit {} s)", max.as_secs()),
                    ),
                    Some(why) => Check::fail(
                        "clock",
                        why,
                        "set the host's clock right (`timedatectl set-ntp true`, or the system's time settings), or ask the Admin's operator to fix theirs",
                    ),
                }
            }
        });
    }
    out
}

/// The live verdict's inputs from the store, the settings checked and what the phone
/// showed (`device`: `None` when no phone is configured).
fn live_inputs(
    cfg: &Config,
    store: &Store,
    settings: &Settings,
    device: Option<&str>,
    pdd_version: Option<&str>,
) -> Result<LiveInputs, LaunchError> {
    let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
    let identity = if settings
        .name
        .as_ref()
        .is_some_and(|n| n.chars().count() > max)
    {
        Some(format!("the client name is longer than {max} characters"))
    } else if !crate::runner::identity_valid(settings) {
        Some("identity not valid for live (no Admin URL or token saved, or the Admin rejected the registration)".into())
    } else {
        None
    };
    let blocking_alerts = store
        .open_alerts()?
        .into_iter()
        .filter(|a| a.kind.blocks_claims())
        .map(|a| format!("{}: {}", a.kind, a.message))
        .collect();
    // The self-test on the version the phone shows now (the store's refusal speaks of the
    // newest version a run recorded, which may be older).
    let dry_run_only = cfg.purchase_mode == PurchaseMode::DryRun;
    let vouched = cfg.allow_live && !dry_run_only;
    let self_test = match (device, pdd_version) {
        (Some(d), Some(v)) if !vouched && !dry_run_only => {
            let record = store.self_test(d, v)?.map(|r| r.record());
            crate::self_test::refusal(&crate::self_test::LiveInputs {
                dry_run_only,
                vouched,
                goods_configured: cfg.self_test_goods_id.is_some(),
                version: Some(v),
                record: record.as_ref(),
            })
        }
        _ => None,
    };
    let store_refusal = match (self_test, device) {
        (Some(why), _) => Some(why),
        (None, _) if dry_run_only => None,
        (None, Some(d)) => setup::live_refusal(cfg, store, d)?,
        (None, None) => Some("no device configured".into()),
    };
    // Reported beside the self-test's refusal, which would otherwise hide it.
    let address_fingerprint = (!dry_run_only && cfg.expected_address.is_empty())
        .then(|| crate::runner::NO_ADDRESS_FINGERPRINT.to_string());
    Ok(LiveInputs {
        dry_run_only,
        identity,
        blocking_alerts,
        address_fingerprint,
        store_refusal,
    })
}
