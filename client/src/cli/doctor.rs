//! `cmautobuy-client doctor`: checks everything a run needs — the adb server and the
//! devices it lists, the phone (state, authorization, model, Android, screen size,
//! screen on and unlocked, battery, PDD installed + version, input injection), the Admin
//! (reachable, token accepted by the idempotent §4.1 `PUT /registration` declaring what a
//! claim would, clock skew against its `Date` header) and the data directory (writable,
//! free space, the store's schema) — and prints every check with its fix, then the live
//! readiness verdict ([`cmautobuy_client::doctor`]). Exit 0 when every check passes, 6
//! when one fails (the live verdict is reported, it does not change the exit code), 2 on
//! bad arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use cmautobuy_client::device::adb::{list_devices, server_version};
use cmautobuy_client::device::{doctor, AdbDevice, DeviceAddress};
use cmautobuy_client::doctor::{
    self as report, Check, LiveInputs, PhoneSection, Report, SeveralReport,
};
use cmautobuy_client::gateway::{AdminGateway, GatewayError};
use cmautobuy_client::store::Store;
use cmautobuy_client::upkeep::{DiskProbe, SystemDisk};
use cmautobuy_contract::AdminErrorCode;

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};
use super::{device, setup};

#[derive(Args)]
pub struct DoctorArgs {
    /// The Admin's base URL (saved like `register --admin`); default: the configured or
    /// saved one.
    #[arg(long = "admin", value_name = "URL")]
    admin: Option<String>,
    /// The client token the Admin issued (saved like `register --token`; never printed).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// An adb serial (`host:port` is `adb connect`ed through the server first) or
    /// `tcp:HOST:PORT` (direct), saved like `run --device`; default: the configured or
    /// saved device. Repeat it to check several phones (default: every phone of
    /// `devices`), one section each.
    #[arg(long, value_name = "SERIAL")]
    device: Vec<String>,
    /// The adb server; default 127.0.0.1 and $ANDROID_ADB_SERVER_PORT or 5037.
    #[arg(long, value_name = "HOST:PORT")]
    adb_server: Option<String>,
    /// RSA key for direct (`tcp:`) connections; default `<data dir>/adbkey`,
    /// created when missing.
    #[arg(long, value_name = "FILE")]
    adb_key: Option<PathBuf>,
    /// Print the report as one JSON object (`checks`: `{name, ok, detail, fix}`, `ready`,
    /// `live`: `{ready, reasons}`, `device`; with several phones the host's `checks`
    /// and `phones`: `[{device, checks, live, details}]`).
    #[arg(long)]
    json: bool,
}

/// How long the adb server may take to say its version and list its devices.
const ADB_SERVER_DEADLINE: Duration = Duration::from_secs(5);

pub fn run(g: &Globals, a: DoctorArgs) -> Result<(), Failure> {
    let conn = Conn {
        admin: a.admin.clone(),
        token: a.token.clone(),
        device: a.device.clone(),
        name: None,
    };
    let cfg = setup::load(g.overrides(Some(&conn), None))?;
    if cfg.devices.len() > 1 {
        return several(&cfg, &a);
    }
    let in_doctor = |f: Failure| f.in_command("doctor");
    let target = device::resolve(
        &cfg,
        a.device.first().map(String::as_str),
        || device::saved_if_any(&cfg),
        a.adb_server.as_deref(),
        a.adb_key.as_deref(),
    )
    .map_err(in_doctor)?
    .ok_or_else(|| {
        in_doctor(Failure::usage(anyhow::anyhow!(
            "no device: use --device SERIAL or --device tcp:HOST:PORT"
        )))
    })?;
    let mut checks = Vec::new();

    // 1. The phone first (a `host:port` serial is `adb connect`ed by its check), then
    // the adb server's version and listing; shown server first.
    let dev = AdbDevice::open(target.addr.clone(), target.options.clone())
        .map_err(|e| in_doctor(Failure::usage(anyhow::anyhow!(e.to_string()))))?;
    let dev = std::sync::Arc::new(dev);
    let phone = doctor::check_with(&dev, cfg.device_thresholds);
    checks.extend(adb_server_checks(&target.addr));
    checks.extend(report::device_checks(&phone));
    // The device backend `run` would use, with one timed dump (issue 15).
    let backend = (phone.state == "device").then(|| {
        cmautobuy_client::device::backend::probe(&dev, cfg.device_backend, cfg.u2_jar.as_deref())
    });
    checks.extend(backend.as_ref().map(report::backend_check));

    // 2. The data directory and the store (the Admin checks need the store: the client
    // id, the saved Admin URL and token, what a claim would declare).
    checks.push(report::data_dir_check(&cfg.data_dir));
    checks.push(report::disk_check(
        &cfg.data_dir,
        SystemDisk.free_bytes(&cfg.data_dir),
        cfg.resources.min_free_disk_bytes,
    ));
    let (store_check, store) = store_check(&cfg);
    checks.push(store_check);

    // 3. The Admin.
    match &store {
        Some(store) => checks.extend(admin_checks(&cfg, store)),
        None => checks.push(Check::fail(
            "admin",
            "not checked: the store did not open",
            "fix the store check first",
        )),
    }

    // 4. The live verdict.
    let live = match &store {
        Some(store) => live_inputs(&cfg, store, &target.serial, phone.pdd_version.as_deref())?,
        None => LiveInputs {
            identity: Some("the store did not open".into()),
            ..LiveInputs::default()
        },
    };
    let r = Report::new(checks, &live, Some(phone)).with_backend(backend);
    print_verdict(a.json, r.to_json(), || r.render_text(), r.ready)
}

/// Prints a report (`--json`, else its text) and turns its verdict into the exit:
/// ready 0, else [`Code::NotReady`].
fn print_verdict(
    json: bool,
    as_json: serde_json::Value,
    text: impl FnOnce() -> String,
    ready: bool,
) -> Result<(), Failure> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&as_json).unwrap_or_default()
        );
    } else {
        print!("{}", text());
    }
    if ready {
        Ok(())
    } else {
        Err(Failure::silent(Code::NotReady))
    }
}

/// `doctor` with several phones ([`cmautobuy_client::phones`], the layout `run` uses):
/// the adb server, the data directory, the root store and the Admin once — the token
/// probe registers the root store's identity only, declaring what that store's claim
/// would (the phone stores' registrations are left as they are) —, then per phone its
/// device checks, its store and its live verdict (from that phone's store).
fn several(cfg: &cmautobuy_client::config::Config, a: &DoctorArgs) -> Result<(), Failure> {
    let in_doctor = |f: Failure| f.in_command("doctor");
    let adb_key = a
        .adb_key
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join("adbkey"));
    let mut host = vec![
        report::data_dir_check(&cfg.data_dir),
        report::disk_check(
            &cfg.data_dir,
            SystemDisk.free_bytes(&cfg.data_dir),
            cfg.resources.min_free_disk_bytes,
        ),
    ];
    let phones = setup::phone_configs(cfg).map_err(in_doctor)?;
    // The root store as `run` would open it: as its phone's when one of these phones
    // has it (its name and declared profile are that phone's); else with no device or
    // name saved (the layout decides those).
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
        Some(store) => host.extend(admin_checks(&root_pc, store)),
        None => host.push(Check::fail(
            "admin",
            "not checked: the store did not open",
            "fix the store check first",
        )),
    }
    let mut server_checked = false;
    let mut read = Vec::new();
    for (serial, pc) in &phones {
        let target = device::resolve(
            pc,
            Some(serial),
            || None,
            a.adb_server.as_deref(),
            Some(&adb_key),
        )
        .map_err(in_doctor)?
        .ok_or_else(|| in_doctor(Failure::usage(anyhow::anyhow!("no device {serial}"))))?;
        let dev = AdbDevice::open(target.addr.clone(), target.options.clone())
            .map_err(|e| in_doctor(Failure::usage(anyhow::anyhow!("device {serial}: {e}"))))?;
        let dev = std::sync::Arc::new(dev);
        let phone = doctor::check_with(&dev, pc.device_thresholds);
        if !server_checked && matches!(target.addr, DeviceAddress::Server { .. }) {
            // After the phone's check (a `host:port` serial is `adb connect`ed by it).
            host.splice(0..0, adb_server_checks(&target.addr));
            server_checked = true;
        }
        let mut checks = report::device_checks(&phone);
        if phone.state == "device" {
            let p = cmautobuy_client::device::backend::probe(
                &dev,
                pc.device_backend,
                pc.u2_jar.as_deref(),
            );
            checks.push(report::backend_check(&p));
        }
        let (sc, store) = if pc.data_dir == cfg.data_dir {
            // The root store, already checked above.
            (None, root_store.clone())
        } else {
            let (c, s) = store_check(pc);
            (Some(c), s)
        };
        checks.extend(sc);
        let live = match &store {
            Some(store) => live_inputs(pc, store, serial, phone.pdd_version.as_deref())?,
            None => LiveInputs {
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
        .map(|(serial, checks, live, phone)| {
            PhoneSection::new(serial, &host, checks, &live, Some(phone))
        })
        .collect();
    let r = SeveralReport::new(host, sections);
    print_verdict(a.json, r.to_json(), || r.render_text(), r.ready)
}

/// `adb_server` (its version) and `adb_devices` (what it lists; an unauthorized phone
/// fails), or `adb_server` skipped for a direct `tcp:` phone.
fn adb_server_checks(addr: &DeviceAddress) -> Vec<Check> {
    let mut out = Vec::new();
    match addr {
        DeviceAddress::Server { server, .. } => {
            match server_version(*server, ADB_SERVER_DEADLINE)
                .and_then(|v| Ok((v, list_devices(*server, ADB_SERVER_DEADLINE)?)))
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
        }
        DeviceAddress::Tcp(addr) => out.push(Check::pass(
            "adb_server",
            format!("skipped: tcp:{addr} is reached directly, not through an adb server"),
        )),
    }
    out
}

/// `store`: the store opens (creating it when new, as `run` would) at the current schema.
fn store_check(cfg: &cmautobuy_client::config::Config) -> (Check, Option<Store>) {
    match setup::open_and_save(cfg) {
        Ok(store) => {
            let check = match store.schema_version() {
                Ok((v, current)) if v == current => Check::pass(
                    "store",
                    format!("{}: schema version {v} (current)", store.path().display()),
                ),
                Ok((v, current)) => Check::fail(
                    "store",
                    format!(
                        "{}: schema version {v}, current {current}",
                        store.path().display()
                    ),
                    "run any command of this version once to migrate it (a backup is made first)",
                ),
                Err(e) => Check::fail(
                    "store",
                    format!("{}: {e}", store.path().display()),
                    "restore the store from <data dir>/backups/ or move it aside",
                ),
            };
            (check, Some(store))
        }
        Err(f) => {
            (
                Check::fail(
                "store",
                f.message(),
                format!(
                    "fix what the message says (a newer client's store needs that client; a damaged one: restore from {}/backups/)",
                    cfg.data_dir.display()
                ),
            ),
                None,
            )
        }
    }
}

const TOKEN_FIX: &str = "give the token the Admin issued for this client: `cmautobuy-client doctor --token T` or `register --token T` (or CMAUTOBUY_TOKEN / token in the config file)";

/// `admin` (reachable), `token` (accepted) and `clock` (skew against the answer's `Date`):
/// one idempotent §4.1 `PUT /registration` declaring exactly what a claim would.
fn admin_checks(cfg: &cmautobuy_client::config::Config, store: &Store) -> Vec<Check> {
    let settings = match store.settings() {
        Ok(s) => s,
        Err(e) => {
            return vec![Check::fail(
                "admin",
                format!("cannot read the settings: {e}"),
                "fix the store check first",
            )]
        }
    };
    let Some(url) = settings.admin_url.clone().filter(|u| !u.is_empty()) else {
        return vec![Check::fail(
            "admin",
            "not configured",
            "give the Admin's URL: --admin URL (or admin_url in the config file / CMAUTOBUY_ADMIN_URL)",
        )];
    };
    if settings.token.as_ref().is_none_or(|t| t.is_empty()) {
        return vec![
            Check::pass("admin", format!("{url}: not contacted (no token)")),
            Check::fail("token", "not configured", TOKEN_FIX),
        ];
    }
    let gw = match setup::gateway(cfg, store) {
        Ok(gw) => gw,
        Err(f) => {
            return vec![Check::fail(
                "token",
                f.message(),
                "give the token again for this Admin: --token T (with --admin URL)",
            )]
        }
    };
    let profile = match setup::declared_profile(cfg, store) {
        Ok(p) => p,
        Err(f) => {
            return vec![Check::fail(
                "admin",
                format!("cannot compute the registration: {}", f.message()),
                "fix the store check first",
            )]
        }
    };
    let rt = match setup::runtime() {
        Ok(rt) => rt,
        Err(f) => return vec![Check::fail("admin", f.message(), "run doctor again")],
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
                let o = cmautobuy_client::clock_check::Offsets {
                    admin_ms: Some(ms),
                    phone_ms: None,
                };
                match cmautobuy_client::clock_check::too_far(max, &o) {
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

/// The live verdict's inputs from the store and what the phone showed.
fn live_inputs(
    cfg: &cmautobuy_client::config::Config,
    store: &Store,
    device: &str,
    pdd_version: Option<&str>,
) -> Result<LiveInputs, Failure> {
    use cmautobuy_client::config::PurchaseMode;
    let settings = store.settings()?;
    let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
    let identity = if settings
        .name
        .as_ref()
        .is_some_and(|n| n.chars().count() > max)
    {
        Some(format!("the client name is longer than {max} characters"))
    } else if !cmautobuy_client::runner::identity_valid(&settings) {
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
    let self_test = match pdd_version {
        Some(v) if !vouched && !dry_run_only => {
            let record = store.self_test(device, v)?.map(|r| r.record());
            cmautobuy_client::selftest::refusal(&cmautobuy_client::selftest::LiveInputs {
                dry_run_only,
                vouched,
                goods_configured: cfg.self_test_goods_id.is_some(),
                version: Some(v),
                record: record.as_ref(),
            })
        }
        _ => None,
    };
    let store_refusal = match self_test {
        Some(why) => Some(why),
        None if dry_run_only => None,
        None => setup::live_refusal(cfg, store, device)?,
    };
    // Reported beside the self-test's refusal, which would otherwise hide it.
    let address_fingerprint = (!dry_run_only && cfg.expected_address.is_empty())
        .then(|| cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT.to_string());
    Ok(LiveInputs {
        dry_run_only,
        identity,
        blocking_alerts,
        address_fingerprint,
        store_refusal,
    })
}
