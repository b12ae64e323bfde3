//! The console in a real browser: headless Chromium
//! driven over WebDriver (Debian's `chromium` and `chromium-driver`, which `scripts/test`
//! installs when missing; the `fantoccini` client) against the console of the real
//! `cmautobuy-client run --allow-live` (no address fingerprint configured), with the
//! mock Admin and a simulated phone: the phone grid with a live screenshot (a PNG of the
//! simulated phone), the address fingerprint saved on 设置 taking effect without a
//! restart (the Admin sees `live` declared, then a live purchase places its order), the
//! reason of a failed task in Chinese, history at 1280 px with its time column, the
//! viewer's money-step screenshots and wireframe text.
//!
//! No sleeps: every wait is WebDriver's own wait for an element, or a poll of a
//! condition with a deadline. Screenshots (PNG) of each page are kept under
//! `$CMAUTOBUY_TEST_ARTIFACTS/console-screenshots/` when that is set, else under
//! `target/console-screenshots/`.
//!
//! Chromium or ChromeDriver missing is a FAILURE with the command that installs them,
//! unless `CMAUTOBUY_SKIP_BROWSER=1` is set (`scripts/test` never sets it).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::world::{goods_url, World, SIM_ADDRESS_FINGERPRINT};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

const TOKEN: &str = "tok-SECRET-browser-5150";

/// Where the screenshots go.
fn screenshot_dir() -> PathBuf {
    let dir = match std::env::var_os("CMAUTOBUY_TEST_ARTIFACTS") {
        Some(d) => PathBuf::from(d).join("console-screenshots"),
        // `target/tmp` → `target/console-screenshots`.
        None => Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .map(|p| p.join("console-screenshots"))
            .unwrap_or_else(|| PathBuf::from("console-screenshots")),
    };
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The first of `candidates` that exists, else the name found on `PATH`.
fn find_program(candidates: &[&str], name: &str) -> Option<PathBuf> {
    for c in candidates {
        let p = Path::new(c);
        if p.is_file() {
            return Some(p.to_path_buf());
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Chromium and ChromeDriver, or `None` when the test is explicitly skipped; panics with
/// the fix otherwise.
fn browser_programs() -> Option<(PathBuf, PathBuf)> {
    let chromium = find_program(&["/usr/bin/chromium"], "chromium");
    let driver = find_program(&["/usr/bin/chromedriver"], "chromedriver");
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        (c, d) => {
            let missing = [
                c.is_none().then_some("chromium"),
                d.is_none().then_some("chromedriver"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" and ");
            if std::env::var("CMAUTOBUY_SKIP_BROWSER").as_deref() == Ok("1") {
                eprintln!("SKIPPED (CMAUTOBUY_SKIP_BROWSER=1): {missing} not installed");
                return None;
            }
            panic!(
                "the console's browser test needs {missing}: install Debian's packages with \
                 `sudo apt-get install -y chromium chromium-driver` (scripts/test does it), \
                 or set CMAUTOBUY_SKIP_BROWSER=1 to skip this test knowingly"
            );
        }
    }
}

/// A ChromeDriver process on a free loopback port; killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start(program: &Path) -> Driver {
        // A port the kernel just handed out (released for chromedriver to bind).
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(program)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let mut driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        // Ready when `/status` says so (bounded poll).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(s)) = driver.child.try_wait() {
                panic!("chromedriver exited at start: {s}");
            }
            if status_ready(port) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver not ready within 30 s on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        driver.url = format!("http://127.0.0.1:{port}");
        driver
    }
}

/// One blocking `GET /status` to chromedriver: `"ready": true`.
fn status_ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.replace(' ', "").contains("\"ready\":true")
}

/// A headless Chromium session.
async fn browser(driver: &Driver, chromium: &Path, profile: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .unwrap_or_else(|e| panic!("no WebDriver session from chromedriver: {e}"))
}

/// Saves a PNG of the current page as `name.png`.
async fn shot(c: &Client, dir: &Path, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// `cmautobuy-client run` (not idle-exiting) with its console on a free loopback port.
fn run_with_console(w: &World, data: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data)
        .args(["run", "--admin", &w.url, "--token", TOKEN])
        .args(["--poll-interval", "0.2", "--console", "127.0.0.1:0"])
        // Vouched for, but no address fingerprint: dry_run until the console sets one.
        .arg("--allow-live")
        .arg("--device")
        .arg(format!("tcp:{}", w.phone.addr()))
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ALLOW_LIVE")
        .env_remove("CMAUTOBUY_EXPECTED_ADDRESS")
        .env("CMAUTOBUY_MIN_TASK_GAP_SECS", "0")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "false")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the console URL on stdout");
        if let Some(rest) = line.strip_prefix("console: ") {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string();
        }
    };
    (child, url)
}

/// The client process (it runs until killed: no `--exit-when-idle`).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every byte the console served to the browser for the current page: the DOM as
/// rendered and the page source as received.
async fn page_bytes(c: &Client) -> String {
    let dom = c.source().await.unwrap();
    let raw = c
        .execute(
            "var x = new XMLHttpRequest(); x.open('GET', location.href, false); x.send(); return x.responseText;",
            vec![],
        )
        .await
        .unwrap();
    format!("{dom}\n{}", raw.as_str().unwrap_or_default())
}

/// The XPath of a `tag` element with class `class` whose text contains `text`.
fn with_text(tag: &str, class: &str, text: &str) -> String {
    format!(
        "//{tag}[contains(concat(' ', normalize-space(@class), ' '), ' {class} ') and contains(., '{text}')]"
    )
}

/// Waits (WebDriver's own wait, polling the DOM, with a deadline) for an element.
async fn wait_for(c: &Client, xpath: &str, limit: Duration) -> fantoccini::elements::Element {
    match c
        .wait()
        .at_most(limit)
        .every(Duration::from_millis(100))
        .for_element(Locator::XPath(xpath))
        .await
    {
        Ok(e) => e,
        Err(e) => panic!(
            "no {xpath} within {limit:?} ({e}): {}",
            c.source().await.unwrap_or_default()
        ),
    }
}

#[test]
fn the_console_in_headless_chromium() {
    let Some((chromium, chromedriver)) = browser_programs() else {
        return;
    };
    let shots = screenshot_dir();
    let w = World::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let (child, console) = run_with_console(&w, data.path());
    let _running = Running(child);
    let driver = Driver::start(&chromedriver);
    let http = reqwest::Client::new();
    let mut served: Vec<(String, String)> = Vec::new();
    let long = Duration::from_secs(120);
    w.rt.block_on(async {
        let c = browser(&driver, &chromium, profile.path()).await;

        // The harness: the console answers.
        c.goto(&format!("{console}/healthz")).await.unwrap();
        let body = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("body")).await.unwrap();
        assert_eq!(body.text().await.unwrap().trim(), "ok");
        served.push(("/healthz".into(), page_bytes(&c).await));

        // 设置 Settings: a new name, saved and registered — the mock Admin lists it.
        c.goto(&format!("{console}/settings")).await.unwrap();
        let name = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("name-0")).await.unwrap();
        name.clear().await.unwrap();
        name.send_keys("浏览器-01").await.unwrap();
        shot(&c, &shots, "01-settings").await;
        served.push(("/settings".into(), page_bytes(&c).await));
        c.find(Locator::Css("form[action='/settings'] button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // Redirected to the page that says it saved (a CSRF-checked POST from a real
        // browser, Origin and all).
        wait_for(&c, &with_text("p", "ok", "已保存"), Duration::from_secs(10)).await;
        assert!(c.current_url().await.unwrap().as_str().contains("/settings?saved=0"));
        served.push(("/settings (saved)".into(), page_bytes(&c).await));
        shot(&c, &shots, "02-settings-saved").await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let clients: serde_json::Value = http
                .get(format!("{}/api/v1/admin/clients", w.url))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if clients.to_string().contains("浏览器-01") {
                break;
            }
            assert!(Instant::now() < deadline, "the new name at the Admin within 30 s: {clients}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // 设置 → 实单: the Admin sees dry_run (no fingerprint), then the fingerprint saved
        // on the page takes effect without a restart: the Admin sees live declared.
        let purchase_mode = |clients: &serde_json::Value| {
            clients["clients"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c.to_string().contains("浏览器-01")))
                .and_then(|c| {
                    let caps = &c["capabilities"];
                    let caps: serde_json::Value = match caps.as_str() {
                        Some(text) => serde_json::from_str(text).unwrap_or_default(),
                        None => caps.clone(),
                    };
                    caps["purchase_mode"].as_str().map(str::to_string)
                })
        };
        let clients: serde_json::Value = http
            .get(format!("{}/api/v1/admin/clients", w.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(purchase_mode(&clients).as_deref(), Some("dry_run"), "{clients}");
        let address = wait_for(&c, "//textarea[@id='address-0']", Duration::from_secs(10)).await;
        address.send_keys(&SIM_ADDRESS_FINGERPRINT.replace('|', "\n")).await.unwrap();
        c.find(Locator::Id("live-save-0")).await.unwrap().click().await.unwrap();
        wait_for(&c, "//p[@id='live-saved-w0']", Duration::from_secs(10)).await;
        wait_for(&c, "//td[b[contains(., '科技园路1号')]]", Duration::from_secs(10)).await;
        shot(&c, &shots, "03-settings-live-saved").await;
        served.push(("/settings (live saved)".into(), page_bytes(&c).await));
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let clients: serde_json::Value = http
                .get(format!("{}/api/v1/admin/clients", w.url))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if purchase_mode(&clients).as_deref() == Some("live") {
                break;
            }
            assert!(Instant::now() < deadline, "live declared within 90 s of the save: {clients}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // 状态 Status: the phone grid, a live screenshot of the simulated phone; live: a
        // dry-run purchase (it stops before 提交订单; its attempt is the one the viewer
        // draws options and taps on) reaches `succeeded`, a live one places its order,
        // then a collect whose goods shows a risk page ends manual_review with its
        // reason in Chinese and raises the account_paused alert — all of it arrives
        // without a reload.
        c.goto(&format!("{console}/")).await.unwrap();
        wait_for(&c, "//div[@class='grid']/article[@class='phone']/section[@class='worker']", Duration::from_secs(10)).await;
        c.execute("window.__sameDocument = 'yes';", vec![]).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let w = c
                .execute("var i = document.querySelector('figure.screen img.screen'); return i && i.complete ? i.naturalWidth : 0;", vec![])
                .await
                .unwrap();
            if w.as_u64().unwrap_or(0) > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the phone's screenshot loaded within 60 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let src = c
            .find(Locator::Css("figure.screen img.screen"))
            .await
            .unwrap()
            .attr("src")
            .await
            .unwrap()
            .unwrap();
        let img = http.get(format!("{console}{src}")).send().await.unwrap();
        assert_eq!(img.headers()["content-type"], "image/png");
        let png = img.bytes().await.unwrap();
        let decoded = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
            .expect("a PNG of the simulated phone");
        assert!(decoded.width() >= 100 && decoded.height() >= 100, "{}x{}", decoded.width(), decoded.height());
        shot(&c, &shots, "03-status-grid").await;
        let mut buy = crate::support::world::live_purchase(
            "buy-1",
            "737116531267",
            json!({"color": "黑色", "size": "L"}),
            1,
            10000,
        );
        buy["execution_mode"] = json!("dry_run");
        w.op.create_task(buy).await.unwrap();
        wait_for(
            &c,
            "//table[@class='recent']//tr[contains(., 'buy-1') and td[@class='ok' and .='succeeded']]",
            long,
        )
        .await;
        shot(&c, &shots, "04-status-succeeded").await;
        assert_eq!(w.op.get_task("buy-1").await.unwrap()["results"][0]["kind"], "result");
        // Live, as the console's fingerprint allows: one order, never paid.
        w.op.create_task(crate::support::world::live_purchase(
            "live-1",
            "737116531267",
            json!({"color": "黑色", "size": "L"}),
            1,
            10000,
        ))
        .await
        .unwrap();
        wait_for(
            &c,
            "//table[@class='recent']//tr[contains(., 'live-1') and td[@class='ok' and .='succeeded']]",
            long,
        )
        .await;
        let live = w.op.get_task("live-1").await.unwrap();
        let sn = live.to_string();
        assert!(
            live["results"][0]["kind"] == "result" && sn.contains("order_sn"),
            "{live}"
        );
        shot(&c, &shots, "04b-status-live-order").await;
        w.op.create_task(json!({"id": "risk-1", "type": "collect",
            "payload": {"goods_id": "693344556677", "goods_url": goods_url("693344556677")}}))
            .await
            .unwrap();
        wait_for(&c, &with_text("div", "manual", "risk-1"), long).await;
        wait_for(&c, &with_text("div", "alert", "account_paused"), long).await;
        // Its reason, Chinese first, on the card.
        wait_for(
            &c,
            "//table[@class='recent']//tr[contains(., 'risk-1')]//div[@class='reason']/span[@class='zh' and contains(., '安全验证')]",
            long,
        )
        .await;
        let same = c.execute("return window.__sameDocument || 'reloaded';", vec![]).await.unwrap();
        assert_eq!(same, json!("yes"), "the outcome arrived by live update, not a reload");
        shot(&c, &shots, "05-status-manual-review-and-alert").await;
        served.push(("/ (live)".into(), page_bytes(&c).await));

        // 历史 History → the task → its attempt → the viewer → an artifact.
        c.goto(&format!("{console}/history")).await.unwrap();
        let link = wait_for(&c, "//table[@class='history']//a[contains(., 'risk-1')]", Duration::from_secs(10)).await;
        // A time column, and the reason in Chinese; the table fits 1280 px.
        wait_for(&c, "//table[@class='history']//tr[contains(., 'risk-1')]/td[1]/time", Duration::from_secs(10)).await;
        wait_for(&c, "//table[@class='history']//tr[contains(., 'risk-1')]//span[@class='zh' and contains(., '安全验证')]", Duration::from_secs(10)).await;
        let fits = c
            .execute("return [document.documentElement.scrollWidth, window.innerWidth];", vec![])
            .await
            .unwrap();
        let (page_w, window_w) = (fits[0].as_f64().unwrap(), fits[1].as_f64().unwrap());
        assert!(window_w <= 1280.0 && page_w <= window_w, "history {page_w} px wide in a {window_w} px window");
        shot(&c, &shots, "06-history").await;
        served.push(("/history".into(), page_bytes(&c).await));
        link.click().await.unwrap();
        let attempt = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("a.attempt")).await.unwrap();
        shot(&c, &shots, "07-history-task").await;
        served.push(("/history/task".into(), page_bytes(&c).await));
        attempt.click().await.unwrap();
        c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("svg.overlay")).await.unwrap();
        wait_for(&c, &with_text("b", "screen-kind", "risk_verification"), Duration::from_secs(10)).await;
        shot(&c, &shots, "08-viewer-risk-page").await;
        served.push(("/history/attempt".into(), page_bytes(&c).await));
        // The drawn overlay has a real size in the page (the stylesheet applied).
        let h = c
            .execute("var s = document.querySelector('svg.overlay'); return s.getBoundingClientRect().height;", vec![])
            .await
            .unwrap();
        assert!(h.as_f64().unwrap_or(0.0) > 100.0, "overlay height {h}");
        // Open the screenshot artifact itself.
        let png_link = c
            .find(Locator::Css("section.files a[href$='.png']"))
            .await
            .unwrap();
        let href = png_link.attr("href").await.unwrap().unwrap();
        png_link.click().await.unwrap();
        c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("img")).await.unwrap();
        assert!(c.current_url().await.unwrap().as_str().ends_with(&href));
        shot(&c, &shots, "09-artifact-png").await;
        let bytes = http.get(format!("{console}{href}")).send().await.unwrap();
        assert_eq!(bytes.headers()["content-type"], "image/png");
        assert!(bytes.bytes().await.unwrap().starts_with(b"\x89PNG"));

        // The dry-run purchase's attempt: the sheet's option boxes, the selected ones,
        // and the taps, drawn over the dumps.
        c.goto(&format!("{console}/history")).await.unwrap();
        wait_for(&c, "//table[@class='history']//a[contains(., 'buy-1')]", Duration::from_secs(10))
            .await
            .click()
            .await
            .unwrap();
        wait_for(&c, "//a[@class='attempt']", Duration::from_secs(10)).await.click().await.unwrap();
        wait_for(&c, "//*[@data-kind='option' and @data-selected='true']", Duration::from_secs(10)).await;
        wait_for(&c, "//*[@data-kind='tap']", Duration::from_secs(10)).await;
        let sheet = wait_for(&c, &with_text("b", "screen-kind", "sku_sheet"), Duration::from_secs(10)).await;
        c.execute("arguments[0].scrollIntoView();", vec![serde_json::to_value(&sheet).unwrap()])
            .await
            .unwrap();
        // Steps without a screenshot: the dump's boxes with their text.
        wait_for(&c, "//*[local-name()='g' and @class='wire-text']/*[local-name()='text']", Duration::from_secs(10)).await;
        shot(&c, &shots, "10-viewer-purchase").await;
        served.push(("/history/attempt (purchase)".into(), page_bytes(&c).await));

        // The live purchase's attempt: the screenshots the task took at its money steps.
        c.goto(&format!("{console}/history")).await.unwrap();
        wait_for(&c, "//table[@class='history']//a[contains(., 'live-1')]", Duration::from_secs(10))
            .await
            .click()
            .await
            .unwrap();
        wait_for(&c, "//a[@class='attempt']", Duration::from_secs(10)).await.click().await.unwrap();
        let money = wait_for(
            &c,
            "//section[contains(@class, 'money')][.//span[@class='money-step']]//img[@class='shot-img']",
            Duration::from_secs(10),
        )
        .await;
        c.execute("arguments[0].scrollIntoView();", vec![serde_json::to_value(&money).unwrap()])
            .await
            .unwrap();
        shot(&c, &shots, "10b-viewer-live-money-steps").await;
        served.push(("/history/attempt (live)".into(), page_bytes(&c).await));

        // Acknowledge the alert: it goes, claiming resumes.
        c.goto(&format!("{console}/")).await.unwrap();
        // The live stream swaps the section in place: an element found just before a
        // swap is stale, so find the button again (bounded) until the click lands.
        let ack = format!("{}//button[@type='submit']", with_text("div", "alert", "account_paused"));
        let mut tries = 0;
        while let Err(e) = wait_for(&c, &ack, Duration::from_secs(10)).await.click().await {
            tries += 1;
            assert!(tries < 5, "the ack button could not be clicked: {e}");
        }
        // The status page again, with no alert left in the phone's section.
        wait_for(
            &c,
            "//section[@class='worker' and not(.//div[contains(concat(' ', normalize-space(@class), ' '), ' alert ')])]",
            Duration::from_secs(30),
        )
        .await;
        shot(&c, &shots, "11-status-acked").await;
        served.push(("/ (acked)".into(), page_bytes(&c).await));
        c.close().await.unwrap();
    });
    // The token is in the client's store: never in a page, its source or an artifact.
    for (page, source) in &served {
        assert!(!source.contains(TOKEN), "the token in {page}'s page source");
    }
    w.stop();
}
