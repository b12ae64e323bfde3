//! `cmautobuy-client bench-device`: times dumps, taps and screenshots
//! on a phone with each device backend — uiautomator2's server (`u2`) and a
//! `uiautomator dump` / `input` process per call (`uiautomator`) — and prints the median
//! and p90 per backend and their ratio: the figures to re-fit the simulated phone's
//! latency profile to. Refuses to run while a client holds the phone (the phone lock).
//!
//! The taps land on the status bar's middle, 10 px from the top: the status bar window
//! takes a tap there and does nothing with it (the shade opens on a swipe down, not a
//! tap), so whatever app is open is not touched.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use cmautobuy_client::config::DeviceBackend;
use cmautobuy_client::device::backend;
use cmautobuy_client::device::state::parse_wm_size;
use cmautobuy_client::device::{AdbDevice, Device};
use cmautobuy_client::screen::Point;

use super::args::{Conn, Globals};
use super::exit::Failure;
use cmautobuy_client::app::device;
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct BenchDeviceArgs {
    /// The phone (adb serial, `HOST:PORT`, or `tcp:HOST:PORT`); default: the configured
    /// or saved device.
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
    /// Timed calls per operation and backend.
    #[arg(long, value_name = "N", default_value_t = 10)]
    samples: u32,
    /// The adb server; default 127.0.0.1 and $ANDROID_ADB_SERVER_PORT or 5037.
    #[arg(long, value_name = "HOST:PORT")]
    adb_server: Option<String>,
    /// RSA key for direct (`tcp:`) connections; default `<data dir>/adbkey`.
    #[arg(long, value_name = "FILE")]
    adb_key: Option<std::path::PathBuf>,
    /// Print the figures as one JSON object.
    #[arg(long)]
    json: bool,
}

const HOLDER: &str = "cmautobuy-client bench-device";

/// The timed calls of one operation on one backend.
#[derive(Default)]
struct Series {
    ms: Vec<u64>,
    errors: Vec<String>,
}

impl Series {
    fn time<T, E: std::fmt::Display>(&mut self, f: impl FnOnce() -> Result<T, E>) {
        let t = Instant::now();
        match f() {
            Ok(_) => self.ms.push(t.elapsed().as_millis() as u64),
            Err(e) => self.errors.push(e.to_string()),
        }
    }
    fn quantile(&self, q: f64) -> Option<u64> {
        let mut v = self.ms.clone();
        v.sort_unstable();
        let i = ((v.len().max(1) - 1) as f64 * q).round() as usize;
        v.get(i).copied()
    }
    fn to_json(&self) -> Value {
        json!({
            "samples": self.ms.len(),
            "median_ms": self.quantile(0.5),
            "p90_ms": self.quantile(0.9),
            "errors": self.errors.len(),
            "first_error": self.errors.first(),
        })
    }
}

/// One operation's series of a backend run.
type OpOf = fn(&BackendRun) -> &Series;

struct BackendRun {
    name: &'static str,
    /// Why this backend could not be measured.
    unavailable: Option<String>,
    /// The first dump through the server (start-up included), u2 only.
    start_ms: Option<u64>,
    dump: Series,
    tap: Series,
    screenshot: Series,
}

pub fn run(g: &Globals, a: BenchDeviceArgs) -> Result<(), Failure> {
    let in_cmd = |f: Failure| f.in_command("bench-device");
    let conn = Conn {
        admin: None,
        token: None,
        device: a.device.clone().into_iter().collect(),
        name: None,
    };
    let cfg = setup::load(conn.over(g.overrides()), LogTo::Stderr).map_err(|e| in_cmd(e.into()))?;
    let target = device::resolve(
        &cfg,
        a.device.as_deref(),
        || device::saved_if_any(&cfg),
        a.adb_server.as_deref(),
        a.adb_key.as_deref(),
    )
    .map_err(|e| in_cmd(e.into()))?
    .ok_or_else(|| {
        in_cmd(Failure::usage(anyhow::anyhow!(
            "no device: use --device SERIAL or --device tcp:HOST:PORT"
        )))
    })?;
    if a.samples == 0 {
        return Err(in_cmd(Failure::usage(anyhow::anyhow!(
            "--samples must be at least 1"
        ))));
    }
    // A task in progress on this phone holds its lock: no taps under its feet.
    let _lock =
        cmautobuy_client::lock::lock_device(&cfg.lock_dir, &target.serial, &target.addr, HOLDER)
            .map_err(|e| in_cmd(Failure::usage(e)))?;
    let adb = std::sync::Arc::new(
        AdbDevice::open(target.addr.clone(), target.options.clone())
            .map_err(|e| in_cmd(Failure::usage(anyhow::anyhow!("device: {e}"))))?,
    );
    let width = adb
        .shell(&["wm", "size"])
        .ok()
        .and_then(|o| parse_wm_size(&o.stdout_text()))
        .map_or(1080, |(w, _)| w);
    let at = Point {
        x: (width / 2) as i32,
        y: 10,
    };
    let mut runs = Vec::new();
    for (name, which) in [
        ("u2", DeviceBackend::U2),
        ("uiautomator", DeviceBackend::Uiautomator),
    ] {
        let chosen = backend::choose(&adb, which, cfg.u2_jar.as_deref());
        let mut r = BackendRun {
            name,
            unavailable: None,
            start_ms: None,
            dump: Series::default(),
            tap: Series::default(),
            screenshot: Series::default(),
        };
        let dev = chosen.device.clone();
        if chosen.u2.is_some() {
            // The server starts with the first dump; timed on its own.
            let t = Instant::now();
            match dev.dump_ui() {
                Ok(_) => r.start_ms = Some(t.elapsed().as_millis() as u64),
                Err(e) => r.unavailable = Some(format!("{}: {e}", e.code())),
            }
        }
        if r.unavailable.is_none() {
            for _ in 0..a.samples {
                r.dump.time(|| dev.dump_ui());
                r.tap.time(|| dev.tap(at));
                r.screenshot.time(|| dev.screenshot());
                // Let the tap's ripple settle before the next dump.
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if let Some(u2) = &chosen.u2 {
            if u2.backend_name() != "u2" && r.unavailable.is_none() {
                r.unavailable = Some(format!(
                    "fell back to uiautomator: {}",
                    u2.fallback_reason().unwrap_or_default()
                ));
            }
            u2.stop_server();
        }
        runs.push(r);
    }
    let ratio = |op: OpOf| {
        let (u2, ui) = (op(&runs[0]).quantile(0.5)?, op(&runs[1]).quantile(0.5)?);
        (u2 > 0 && runs[0].unavailable.is_none()).then(|| ui as f64 / u2 as f64)
    };
    let ops: [(&str, OpOf); 3] = [
        ("dump", |r| &r.dump),
        ("tap", |r| &r.tap),
        ("screenshot", |r| &r.screenshot),
    ];
    if a.json {
        let mut backends = serde_json::Map::new();
        for r in &runs {
            let mut o = json!({
                "unavailable": r.unavailable,
                "server_start_ms": r.start_ms,
            });
            for (op, f) in &ops {
                o[*op] = f(r).to_json();
            }
            backends.insert(r.name.into(), o);
        }
        let ratios: serde_json::Map<String, Value> = ops
            .iter()
            .map(|(op, f)| (op.to_string(), json!(ratio(*f))))
            .collect();
        let v = json!({
            "device": target.serial,
            "samples": a.samples,
            "tap_point": {"x": at.x, "y": at.y, "why": "the status bar's middle: taken by the status bar window, does nothing"},
            "backends": backends,
            "uiautomator_over_u2": ratios,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!(
            "bench-device {} · {} samples · taps at ({}, {}) (the status bar: does nothing)",
            target.serial, a.samples, at.x, at.y
        );
        for r in &runs {
            match &r.unavailable {
                Some(why) => println!("{:<12} unavailable: {why}", r.name),
                None => println!(
                    "{:<12}{}",
                    r.name,
                    r.start_ms
                        .map(|ms| format!(" (server start + first dump {ms} ms)"))
                        .unwrap_or_default()
                ),
            }
        }
        println!(
            "{:<12} {:>18} {:>18} {:>8}",
            "", "u2 median/p90", "uiautomator", "ratio"
        );
        let cell = |s: &Series| match (s.quantile(0.5), s.quantile(0.9)) {
            (Some(m), Some(p)) => format!("{m}/{p} ms"),
            _ => "-".into(),
        };
        for (op, f) in &ops {
            println!(
                "{:<12} {:>18} {:>18} {:>8}",
                op,
                cell(f(&runs[0])),
                cell(f(&runs[1])),
                ratio(*f).map(|x| format!("{x:.2}x")).unwrap_or("-".into())
            );
            for r in &runs {
                if let Some(e) = f(r).errors.first() {
                    println!(
                        "  {} {op}: {} errors, first: {e}",
                        r.name,
                        f(r).errors.len()
                    );
                }
            }
        }
    }
    Ok(())
}
