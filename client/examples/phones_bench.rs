//! The several-phones benchmark: N simulated phones with the realistic latency
//! profile, ONE real `cmautobuy-client run --device … --device …` process serving all of
//! them, one mock Admin, and an operator's browser hammering the console — for a few
//! minutes without faults. It measures what one process costs per phone:
//!
//! - **CPU per phone**: the client process's user + system time (`/proc/PID/stat`) over
//!   the measured window (after a warm-up), divided by the window and the phones, in %
//!   of one core — target ≤ 2 %;
//! - **RSS**: the client process's resident set, sampled every second — target ≤ 20 MB +
//!   5 MB per phone;
//! - **the console under that load**: every 200 ms a page (`/`, `/history`, `/settings`
//!   in turn) and every second a new server-sent-events stream (`/events`: time to the
//!   response head and to the first event), each over a fresh loopback connection, timed
//!   from connect to the last byte (pages) or to the head (streams) — target p99 <
//!   100 ms;
//! - **the phone cards' screenshots**, as the status page's script reloads them: every
//!   5 s each phone's `/phone/N/screen.png` (a cache: at most one screenshot per phone
//!   per 5 s, taken between the task's device calls, never in a money step) — reported,
//!   not judged against the pages' target (a fresh one waits for the device call in
//!   flight and takes a `screencap`); a console without the route (404) is noted once.
//!
//! The pool is kept at about two open tasks per phone: collects (50 %), live purchases
//! (25 %) and dry runs (25 %), as in the soak. Exit 0 when every target holds and every
//! task ended as it should, 1 otherwise, 2 on a harness error. `scripts/bench-phones`
//! builds the release binaries and runs it; BENCHMARKS.md records a run.
//!
//! Usage: `phones_bench --client BIN [--phones 8] [--minutes 5] [--warmup 1] [--seed 1]
//! [--out DIR]`

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cmautobuy_sim_phone::{Catalog, LatencyProfile, PopupSchedule, SimConfig, SimPhone};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::json;

#[path = "common/pool.rs"]
mod pool;
use pool::{is_terminal, open_tasks, pick, rss_kb, templates};

const TOKEN: &str = "bench-token-0123456789";

/// The screenshots fetched: latencies (ms), 404s, errors.
type Shots = (Vec<f64>, usize, Vec<String>);

struct Args {
    client: PathBuf,
    phones: usize,
    minutes: f64,
    warmup: f64,
    seed: u64,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        client: PathBuf::new(),
        phones: 8,
        minutes: 5.0,
        warmup: 1.0,
        seed: 1,
        out: std::env::temp_dir().join("cmautobuy-phones-bench"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--client" => a.client = PathBuf::from(v()?),
            "--phones" => a.phones = v()?.parse().map_err(|e| format!("--phones: {e}"))?,
            "--minutes" => a.minutes = v()?.parse().map_err(|e| format!("--minutes: {e}"))?,
            "--warmup" => a.warmup = v()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--seed" => a.seed = v()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--out" => a.out = PathBuf::from(v()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.client.as_os_str().is_empty() {
        return Err("--client BIN is required".into());
    }
    if a.phones == 0 {
        return Err("--phones must be at least 1".into());
    }
    if a.warmup >= a.minutes {
        return Err("--warmup must be shorter than --minutes".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    match bench() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("phones_bench: {e}");
            ExitCode::from(2)
        }
    }
}

/// Kills the client when the harness returns early.
struct Reaper(Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn bench() -> Result<bool, String> {
    let args = parse_args()?;
    let _ = std::fs::remove_dir_all(&args.out);
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let (rt, op, url) = pool::serve_admin(&args.out, TOKEN)?;

    let catalog = Catalog::load(&Catalog::bundled_dir()).map_err(|e| e.to_string())?;
    let mut phones = Vec::new();
    for i in 0..args.phones {
        let mut c = SimConfig::new(catalog.clone());
        c.profile = LatencyProfile::Realistic;
        c.seed = args.seed * 1000 + i as u64;
        c.popups = PopupSchedule::Seeded { percent: 10 };
        c.state_file = Some(args.out.join(format!("phone-{i}.json")));
        phones.push(
            SimPhone::bind("127.0.0.1:0".parse().map_err(|_| "addr")?, c)
                .map_err(|e| e.to_string())?,
        );
    }

    let data = args.out.join("client");
    let log = std::fs::File::create(args.out.join("client.log")).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&args.client);
    cmd.arg("--data-dir")
        .arg(&data)
        .args(["run", "--admin", &url, "--token", TOKEN, "--allow-live"])
        .args(["--poll-interval", "1", "--name", "bench"])
        .args(["--console", "127.0.0.1:0"]);
    for p in &phones {
        cmd.arg("--device").arg(format!("tcp:{}", p.addr()));
    }
    cmd.env_remove("CMAUTOBUY_CONFIG")
        .env("CMAUTOBUY_LOCK_DIR", args.out.join("locks"))
        // As in the soak: the caps would turn every phone to dry runs within minutes.
        .env("CMAUTOBUY_LIVE_ORDERS_PER_HOUR", "0")
        .env("CMAUTOBUY_LIVE_ORDERS_PER_DAY", "0")
        .env("CMAUTOBUY_EXPECTED_ADDRESS", "科技园路1号|张三")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log));
    let mut child = cmd.spawn().map_err(|e| format!("client: {e}"))?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("client stdout")?;
    let mut reaper = Reaper(Some(child));
    let console = console_addr(stdout, Duration::from_secs(30))?;
    println!(
        "phones_bench: {} phones in one client (pid {pid}), {} min ({} min warm-up), Admin {url}, console http://{console}/, output {}",
        args.phones,
        args.minutes,
        args.warmup,
        args.out.display()
    );

    // The operator's browser: pages and event streams, timed.
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let timings: Arc<Mutex<BTreeMap<&'static str, Vec<f64>>>> = Arc::default();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let browser = {
        let (stop, measuring, timings, errors) = (
            stop.clone(),
            measuring.clone(),
            timings.clone(),
            errors.clone(),
        );
        std::thread::spawn(move || {
            let pages = ["/", "/history", "/settings"];
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let tick = Instant::now();
                let path = pages[n % pages.len()];
                let page = get_page(console, path);
                let events = n.is_multiple_of(5).then(|| open_events(console));
                if measuring.load(Ordering::SeqCst) {
                    let mut t = timings.lock().unwrap_or_else(|p| p.into_inner());
                    let mut e = errors.lock().unwrap_or_else(|p| p.into_inner());
                    match page {
                        Ok(ms) => t.entry(path).or_default().push(ms),
                        Err(err) => e.push(format!("GET {path}: {err}")),
                    }
                    match events {
                        Some(Ok((head, first))) => {
                            t.entry("/events (head)").or_default().push(head);
                            if let Some(f) = first {
                                t.entry("/events (first event)").or_default().push(f);
                            }
                        }
                        Some(Err(err)) => e.push(format!("GET /events: {err}")),
                        None => {}
                    }
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(200).saturating_sub(tick.elapsed()));
            }
        })
    };

    // The status page's script: each phone's screenshot every 5 s.
    let screens: Arc<Mutex<Shots>> = Arc::default();
    let shooter = {
        let (stop, measuring, screens) = (stop.clone(), measuring.clone(), screens.clone());
        let phones_n = args.phones;
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let tick = Instant::now();
                for i in 0..phones_n {
                    let got = get_image(console, &format!("/phone/{i}/screen.png"));
                    if measuring.load(Ordering::SeqCst) {
                        let mut s = screens.lock().unwrap_or_else(|p| p.into_inner());
                        match got {
                            Ok(Some(ms)) => s.0.push(ms),
                            Ok(None) => s.1 += 1,
                            Err(e) => s.2.push(e),
                        }
                    }
                }
                let mut left = Duration::from_secs(5).saturating_sub(tick.elapsed());
                while !left.is_zero() && !stop.load(Ordering::SeqCst) {
                    let step = left.min(Duration::from_millis(200));
                    std::thread::sleep(step);
                    left = left.saturating_sub(step);
                }
            }
        })
    };

    let templates = templates()?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    let t0 = Instant::now();
    let end = args.minutes * 60.0;
    let warm = args.warmup * 60.0;
    let clk_tck = clock_ticks_per_sec();
    let mut created: Vec<(String, &'static str)> = Vec::new();
    let mut seq = 0u64;
    let mut next_feed = 0.0;
    let mut rss: Vec<u64> = Vec::new();
    let mut cpu_at_warm: Option<(f64, u64)> = None;
    let mut next_progress = 60.0;
    while t0.elapsed().as_secs_f64() < end {
        let t = t0.elapsed().as_secs_f64();
        if let Some(c) = reaper.0.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                return Err(format!("the client exited during the run: {st}"));
            }
        }
        if t >= next_feed {
            let open = open_tasks(&rt, &op, &created)?;
            for _ in open..2 * args.phones {
                seq += 1;
                let (kind, tpl) = pick(&templates, &mut rng);
                let mut task = tpl.clone();
                let id = format!("bench-{seq:05}-{kind}");
                task["id"] = json!(id);
                rt.block_on(op.create_task(task))
                    .map_err(|e| format!("create {id}: {e:?}"))?;
                created.push((id, kind));
            }
            next_feed = t + 2.0;
        }
        if t >= warm {
            if cpu_at_warm.is_none() {
                cpu_at_warm = Some((t, cpu_ticks(pid)?));
                measuring.store(true, Ordering::SeqCst);
            }
            rss.push(rss_kb(pid));
        }
        if t >= next_progress {
            println!(
                "[{:5.1} min] tasks created {}, RSS {:.1} MB",
                t / 60.0,
                created.len(),
                rss_kb(pid) as f64 / 1024.0
            );
            next_progress += 60.0;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let t_end = t0.elapsed().as_secs_f64();
    let cpu_end = cpu_ticks(pid)?;
    measuring.store(false, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    let _ = browser.join();
    let _ = shooter.join();

    // Stop feeding, let the pool drain (bounded), then stop the client.
    let drain_deadline = Instant::now() + Duration::from_secs(180);
    while open_tasks(&rt, &op, &created)? > 0 && Instant::now() < drain_deadline {
        std::thread::sleep(Duration::from_secs(2));
    }
    let left_open = open_tasks(&rt, &op, &created)?;
    if let Some(mut c) = reaper.0.take() {
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        let limit = Instant::now() + Duration::from_secs(60);
        loop {
            match c.try_wait() {
                Ok(Some(st)) => {
                    println!("client exit after SIGTERM: {st}");
                    break;
                }
                Ok(None) if Instant::now() < limit => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                _ => {
                    let _ = c.kill();
                    let _ = c.wait();
                    println!("client did not exit within 60 s of SIGTERM: killed");
                    break;
                }
            }
        }
    }

    // Outcomes.
    let v = rt.block_on(op.list_tasks()).map_err(|e| format!("{e:?}"))?;
    let list = v["tasks"]
        .as_array()
        .or_else(|| v.as_array())
        .cloned()
        .unwrap_or_default();
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    let mut bad = 0usize;
    for t in &list {
        let Some(id) = t["id"].as_str() else { continue };
        let Some((_, kind)) = created.iter().find(|(c, _)| c == id) else {
            continue;
        };
        let status = t["status"].as_str().unwrap_or("?");
        if is_terminal(status) && status != "succeeded" {
            bad += 1;
        }
        *by.entry(format!("{kind} {status}")).or_default() += 1;
    }
    println!(
        "tasks: {} created, {left_open} open at the end",
        created.len()
    );
    for (k, n) in &by {
        println!("  {n:6}  {k}");
    }

    // CPU and memory.
    let (t_warm, cpu_warm) = cpu_at_warm.ok_or("the run ended before the warm-up did")?;
    let window = t_end - t_warm;
    let cpu_secs = (cpu_end.saturating_sub(cpu_warm)) as f64 / clk_tck;
    let per_phone = 100.0 * cpu_secs / window / args.phones as f64;
    let rss_max = rss.iter().copied().max().unwrap_or(0) as f64 / 1024.0;
    let rss_limit = 20.0 + 5.0 * args.phones as f64;
    println!(
        "CPU: {cpu_secs:.1} s over {window:.0} s for {} phones = {per_phone:.2} % of one core per phone (target ≤ 2 %)",
        args.phones
    );
    println!(
        "RSS: max {rss_max:.1} MB (target ≤ {rss_limit:.0} MB = 20 + 5 × {})",
        args.phones
    );

    // The console.
    let timings = timings.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let errors = errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut console_ok = errors.is_empty() && !timings.is_empty();
    for (route, ms) in &timings {
        let (p50, p99, max) = percentiles(ms);
        let within = p99 < 100.0;
        // The first event of a stream waits for the first change only when the console
        // sends no snapshot at once; it is reported, not judged.
        if !route.ends_with("(first event)") {
            console_ok &= within;
        }
        println!(
            "console {route}: {} requests, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms{}",
            ms.len(),
            if within { "" } else { "  (over 100 ms)" }
        );
    }
    {
        let (ms, missing, errs) = screens.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if !ms.is_empty() {
            let (p50, p99, max) = percentiles(&ms);
            println!(
                "console /phone/N/screen.png (every 5 s per phone, reported): {} requests, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
                ms.len()
            );
        }
        if missing > 0 {
            println!("console /phone/N/screen.png: not served ({missing} requests answered 404)");
        }
        for e in errs.iter().take(5) {
            println!("console screenshot error: {e}");
        }
    }
    for e in errors.iter().take(10) {
        println!("console error: {e}");
    }
    if errors.len() > 10 {
        println!("console errors: {} in all", errors.len());
    }

    let ok = per_phone <= 2.0 && rss_max <= rss_limit && console_ok && left_open == 0 && bad == 0;
    println!("{}", if ok { "BENCH OK" } else { "BENCH FAILED" });
    for p in phones {
        p.shutdown();
    }
    rt.shutdown_timeout(Duration::from_secs(2));
    Ok(ok)
}

/// Reads the client's stdout until it prints its console line (`console: http://ADDR/ …`)
/// and keeps draining it afterwards so the client never blocks on a full pipe.
fn console_addr(stdout: std::process::ChildStdout, limit: Duration) -> Result<SocketAddr, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(rest) = line.split("http://").nth(1) {
                    let addr = rest.split('/').next().unwrap_or("").to_string();
                    if tx.send(addr).is_ok() {
                        sent = true;
                    }
                }
            }
        }
    });
    let addr = rx
        .recv_timeout(limit)
        .map_err(|_| format!("the client printed no console URL within {limit:?}"))?;
    addr.parse()
        .map_err(|e| format!("console address {addr:?}: {e}"))
}

/// One GET over a fresh connection, read to the end: milliseconds from connect to the
/// last byte. A non-200 answer is an error.
fn get_page(addr: SocketAddr, path: &str) -> Result<f64, String> {
    let start = Instant::now();
    let mut s = connect(addr)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/html\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).map_err(|e| e.to_string())?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let head = String::from_utf8_lossy(&body[..body.len().min(64)]).to_string();
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("answered {:?}", head.lines().next().unwrap_or("")));
    }
    Ok(ms)
}

/// One image: milliseconds to its last byte (`Ok(None)`: 404, the console has no such
/// route); anything but a PNG or 404 (a 503 before the first screenshot) is an error.
fn get_image(addr: SocketAddr, path: &str) -> Result<Option<f64>, String> {
    let start = Instant::now();
    let mut s = connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: image/png\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).map_err(|e| e.to_string())?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let head = String::from_utf8_lossy(&body[..body.len().min(64)]).to_string();
    if head.starts_with("HTTP/1.1 404") {
        return Ok(None);
    }
    let png = body
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| &body[i + 4..]);
    if !head.starts_with("HTTP/1.1 200") || !png.is_some_and(|b| b.starts_with(b"\x89PNG")) {
        return Err(format!(
            "{path} answered {:?}",
            head.lines().next().unwrap_or("")
        ));
    }
    Ok(Some(ms))
}

/// Opens the event stream: milliseconds to the response head, and to the first event
/// when one comes within 2 s.
fn open_events(addr: SocketAddr) -> Result<(f64, Option<f64>), String> {
    let start = Instant::now();
    let mut s = connect(addr)?;
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let head = start.elapsed().as_secs_f64() * 1000.0;
    if !line.starts_with("HTTP/1.1 200") {
        return Err(format!("answered {:?}", line.trim_end()));
    }
    let mut first = None;
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line.starts_with("data:") => {
                first = Some(start.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            Ok(_) => {}
        }
        if start.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    Ok((head, first))
}

fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// (p50, p99, max) of a sample, nearest rank.
fn percentiles(ms: &[f64]) -> (f64, f64, f64) {
    let mut v = ms.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| {
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[i]
    };
    (at(0.50), at(0.99), v.last().copied().unwrap_or(0.0))
}

/// The process's user + system time in clock ticks (`/proc/PID/stat` fields 14 and 15,
/// counted after the command name, which may hold spaces).
fn cpu_ticks(pid: u32) -> Result<u64, String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    let rest = s
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("stat: no command name")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let n = |i: usize| -> Result<u64, String> {
        f.get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("stat: field {}", i + 3))
    };
    Ok(n(11)? + n(12)?)
}

/// `getconf CLK_TCK` (100 on Linux when it cannot be read).
fn clock_ticks_per_sec() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}
