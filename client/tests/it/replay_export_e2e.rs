//! Record → export → replay (items 1, 4 and the redaction acceptance): the real
//! binary runs a dry-run purchase on the simulated phone while a notification is shown
//! (its window is in every dump) and the account's default address is on the sheet;
//! `replay-export` turns the attempt into a scenario that holds none of the notification,
//! the receiver's name, the phone number or the address; the simulated phone's replay
//! mode loads it, and the real binary run against the replay ends with the same outcome.
//! A `diagnose-bundle` of the same data directory holds no token and no personal data.

use std::path::{Path, PathBuf};
use std::process::Command;

use cmautobuy_sim_phone::{HeadsUp, Scenario};
use serde_json::{json, Value};

use crate::support::world::{goods_url, World};

const GOODS: &str = "737116531267";
/// What the notification says (an SMS code and a phone number), the receiver, the
/// phone number and the address the simulated account shows on the sheet.
const SECRETS: &[&str] = &[
    "验证码",
    "834512",
    "13912345678",
    "com.android.systemui",
    "张三",
    "138****0000",
    "广东省",
    "科技园路",
];

fn dry(id: &str) -> Value {
    json!({
        "id": id,
        "type": "purchase",
        "execution_mode": "dry_run",
        "payload": {
            "goods_id": GOODS,
            "goods_url": goods_url(GOODS),
            "options": {"color": "黑色", "size": "L"},
            "quantity": 1,
            "max_price_cent": 10000,
        },
    })
}

/// The attempt folders under a data directory's artifacts.
fn attempts(data: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(data.join("artifacts")).unwrap().flatten() {
        for a in std::fs::read_dir(t.path()).unwrap().flatten() {
            v.push(a.path());
        }
    }
    v
}

/// Every file of a folder as text (lossy), by name.
fn texts(dir: &Path) -> Vec<(String, String)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned(),
            )
        })
        .collect()
}

/// The outcome of a report, without what differs between runs (times, attempt ids,
/// artifact references, round-trip counts).
fn outcome(kind: &str, body: &Value) -> Value {
    let mut b = body.clone();
    if let Some(o) = b.as_object_mut() {
        o.remove("diagnostics");
        o.remove("attempt_id");
        o.remove("started_at");
        o.remove("finished_at");
        o.remove("idempotency_key");
        o.remove("client_id");
        o.remove("completed_at");
    }
    // The address the sheet showed: the replayed screen shows the masked one.
    if let Some(p) = b.get_mut("purchase").and_then(Value::as_object_mut) {
        p.remove("delivery_address");
    }
    json!({"kind": kind, "body": b})
}

fn client() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.env_remove("CMAUTOBUY_CONFIG");
    c
}

#[test]
fn an_export_holds_no_personal_data_or_notification_and_replays_to_the_same_outcome() {
    // 1. Record: a dry-run purchase with a notification over the top of the screen.
    let w = World::start("rx-rec");
    w.create(dry("rx-1"));
    w.phone.show_heads_up(
        HeadsUp::wechat("王小明", "验证码 834512，手机 13912345678"),
        None,
    );
    // The shade pulled down over PDD: it lists the notification, and it is the window
    // `uiautomator dump` shows (a heads-up alone never is).
    w.phone.set_shade(true);
    let data = tempfile::tempdir().unwrap();
    w.run(data.path());
    let (kind, body) = w.report("rx-1");
    assert_eq!(kind, "result", "{body}");
    let recorded = outcome(&kind, &body);
    w.stop();
    let att = attempts(data.path());
    assert_eq!(att.len(), 1, "{att:?}");
    let att = &att[0];
    // The recording holds them all (else the test proves nothing).
    let raw: String = texts(att).into_iter().map(|(_, t)| t).collect();
    for s in SECRETS {
        assert!(raw.contains(s), "the recording has no {s}");
    }

    // 2. Export.
    let out_root = tempfile::tempdir().unwrap();
    let out = out_root.path().join("scenario");
    let o = client()
        .arg("replay-export")
        .arg(att)
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("replay-export: {stdout}");
    for (name, text) in texts(&out) {
        for s in SECRETS {
            assert!(!text.contains(s), "{s} in the export's {name}");
        }
    }
    assert!(
        !texts(&out).iter().any(|(n, _)| n.ends_with(".png")),
        "screenshots are left out"
    );
    // A second export into the same folder is refused (exit 2, naming the problem).
    let o = client()
        .arg("replay-export")
        .arg(att)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));

    // 3. Replay: the simulated phone plays the scenario; the same task, the real binary.
    let scenario = Scenario::load(&out).unwrap_or_else(|e| panic!("{e}"));
    let r = World::builder("rx-play").replay(scenario).start();
    r.create(dry("rx-1"));
    let data2 = tempfile::tempdir().unwrap();
    let run = r.command(data2.path()).output().unwrap();
    let log: Vec<String> = r
        .phone
        .replay_log()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stderr),
        log.join("\n")
    );
    let (kind2, body2) = r.report("rx-1");
    eprintln!(
        "replay: {} actions, {} off-script",
        log.len(),
        r.phone.off_script_count()
    );
    assert_eq!(
        outcome(&kind2, &body2),
        recorded,
        "replay log:\n{}",
        log.join("\n")
    );
    // The address read on the replayed sheet is the masked one, in the same shape.
    let masked = body2["purchase"]["delivery_address"].as_str().unwrap_or("");
    assert!(
        masked.contains("****")
            && masked.contains('省')
            && !SECRETS.iter().any(|s| masked.contains(s)),
        "{masked}"
    );
    assert_eq!(r.phone.off_script_count(), 0, "{}", log.join("\n"));
    r.stop();

    // 4. A diagnose bundle of the recording's data directory: no token, no personal data.
    let bundle = out_root.path().join("bundle.tar.gz");
    std::fs::write(
        data.path().join("config.toml"),
        "token = \"rx-secret-token-1\"\nconsole_password = \"rx-console-pw\"\n",
    )
    .unwrap();
    let o = client()
        .arg("--data-dir")
        .arg(data.path())
        .args(["diagnose-bundle", "--out"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&bundle).unwrap(),
    ));
    let mut names = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for s in SECRETS
            .iter()
            .chain(&["rx-secret-token-1", "rx-console-pw"])
        {
            assert!(!text.contains(s), "{s} in the bundle's {name}");
        }
        names.push(name);
    }
    for n in [
        "diagnose/replay/scenario.json",
        "diagnose/version.txt",
        "diagnose/config.toml",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} not in {names:?}");
    }
}

/// The token `register` saved in the store — not in the config file, the environment or
/// a flag — is a secret of the bundle too: a log line holding it (as written by an
/// older client, or echoed by an Admin) leaves no trace of it in `log.txt`, plain or
/// percent-encoded, and the bundle says the token was removed truthfully.
#[test]
fn a_bundle_scrubs_the_token_saved_in_the_store() {
    const SAVED: &str = "saved/Tok+en-in-store-5521";
    const SAVED_ENCODED: &str = "saved%2FTok%2Ben-in-store-5521";
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Saved locally, then refused by an Admin nobody runs (exit 4: the settings stay).
    let o = client()
        .arg("--data-dir")
        .arg(&data)
        .args([
            "register",
            "--admin",
            "http://127.0.0.1:9",
            "--token",
            SAVED,
        ])
        .env_remove("CMAUTOBUY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{o:?}");
    std::fs::create_dir_all(data.join("logs")).unwrap();
    std::fs::write(
        data.join("logs/cmautobuy-client.log"),
        format!(
            "2026-01-01T00:00:00Z WARN claim failed error=HTTP 401: Authorization: Bearer {SAVED}\n\
             2026-01-01T00:00:01Z WARN echo url=https://admin.example/?t={SAVED_ENCODED}\n"
        ),
    )
    .unwrap();
    let bundle = tmp.path().join("bundle.tar.gz");
    let o = client()
        .arg("--data-dir")
        .arg(&data)
        .args(["diagnose-bundle", "--out"])
        .arg(&bundle)
        .env_remove("CMAUTOBUY_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&bundle).unwrap(),
    ));
    let mut log = None;
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for s in [SAVED, SAVED_ENCODED] {
            assert!(!text.contains(s), "{s} in the bundle's {name}:\n{text}");
        }
        if name == "diagnose/log.txt" {
            log = Some(text);
        }
    }
    let log = log.expect("log.txt in the bundle");
    assert!(log.contains("Bearer ***"), "{log}");
    assert!(stdout.contains("saved in the store"), "{stdout}");
}
