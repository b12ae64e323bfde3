//! The layering, every key's environment twin, and the errors: the key, where its value
//! came from (file line and column, variable, flag), and the known key a typo meant.

use super::layers::Layer;
use super::resolved::MB;
use super::settings::Settings;
use super::*;
use crate::artifacts::Retention;
use crate::console::ConsoleAddr;
use crate::pacing::PacingConfig;
use crate::secret::Secret;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn retention_keys_from_file_and_env_with_validation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "artifacts_keep_attempts = 2\nartifacts_max_age_days = 7\n",
    )
    .unwrap();
    let path = file.to_str().unwrap().to_string();
    let c = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(c.retention.keep_attempts, 2);
    assert_eq!(c.retention.max_age, Some(Duration::from_secs(7 * 86_400)));

    // The environment wins over the file; 0 days means no age limit.
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "9"),
            ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "0"),
        ]),
    )
    .unwrap();
    assert_eq!(c.retention.keep_attempts, 9);
    assert_eq!(c.retention.max_age, None);

    // Unset: the defaults.
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert_eq!(c.retention, Retention::default());

    // Nonsense is a typed error naming the key, never a silent default.
    for (k, v) in [
        ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "0"),
        ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "-1"),
        ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "two"),
        ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "-3"),
        ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "NaN"),
    ] {
        let err = load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)]))
            .expect_err(&format!("{k}={v}"));
        assert!(matches!(err, ConfigError::Value { .. }), "{k}={v}: {err}");
        assert!(
            err.to_string().to_lowercase().contains("artifacts"),
            "{err}"
        );
    }
}

#[test]
fn layers_defaults_file_env_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "admin_url = \"http://file\"\ntoken = \"file-token\"\ndevice = \"file-dev\"\nname = \"file-name\"\npoll_interval_secs = 3\n",
    )
    .unwrap();
    let env = env_of(&[
        ("CMAUTOBUY_CONFIG", file.to_str().unwrap()),
        ("CMAUTOBUY_TOKEN", "env-token"),
        ("CMAUTOBUY_DEVICE", "env-dev"),
        ("HOME", "/home/x"),
    ]);
    let c = load(
        Overrides::default().text("device", "--device", Some("flag-dev")),
        &env,
    )
    .unwrap();
    assert_eq!(c.admin_url.as_deref(), Some("http://file"));
    assert_eq!(c.token.as_ref().map(Secret::expose), Some("env-token"));
    assert_eq!(c.device.as_deref(), Some("flag-dev"));
    assert_eq!(c.name.as_deref(), Some("file-name"));
    assert_eq!(c.poll_interval, Duration::from_secs(3));
    assert_eq!(c.request_timeout, Duration::from_secs(30));
    assert_eq!(c.data_dir, PathBuf::from("/home/x/.local/share/cmautobuy"));
    assert!(!format!("{c:?}").contains("env-token"));
    // Nor the layers' own Debug (the flags' token included).
    let flags = Overrides::default().text("token", "--token", Some("flag-token"));
    let schema = Settings::schema();
    let layer = Layer::from_env(&schema, &env).unwrap();
    for shown in [format!("{flags:?}"), format!("{layer:?}")] {
        assert!(
            !shown.contains("flag-token") && !shown.contains("env-token"),
            "{shown}"
        );
    }
}

#[test]
fn config_errors_do_not_quote_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "token = \"secret-tok\" x\n").unwrap();
    let err = load(Overrides::default().with_config(Some(file)), &env_of(&[])).unwrap_err();
    assert!(!err.to_string().contains("secret-tok"), "{err}");
}

#[test]
fn the_account_check_is_on_unless_switched_off() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert!(c.gate.account_check);
    let env = [("HOME", "/h"), ("CMAUTOBUY_ACCOUNT_CHECK", "0")];
    let c = load(Overrides::default(), &env_of(&env)).unwrap();
    assert!(!c.gate.account_check);
    let env = [("HOME", "/h"), ("CMAUTOBUY_ACCOUNT_CHECK", "maybe")];
    let e = load(Overrides::default(), &env_of(&env)).unwrap_err();
    assert!(e.to_string().contains("CMAUTOBUY_ACCOUNT_CHECK"), "{e}");
}

#[test]
fn the_pdd_version_gate_is_on_unless_switched_off() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert!(c.gate.pdd_version_gate);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "pdd_version_gate = false\n").unwrap();
    let path = file.to_str().unwrap().to_string();
    let env = [("CMAUTOBUY_CONFIG", path.as_str()), ("HOME", "/h")];
    let c = load(Overrides::default(), &env_of(&env)).unwrap();
    assert!(!c.gate.pdd_version_gate);
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_PDD_VERSION_GATE", "true"),
        ]),
    )
    .unwrap();
    assert!(c.gate.pdd_version_gate);
    let bad = load(
        Overrides::default(),
        &env_of(&[("HOME", "/h"), ("CMAUTOBUY_PDD_VERSION_GATE", "maybe")]),
    );
    assert!(bad.is_err());
}

#[test]
fn the_device_backend_is_auto_unless_chosen() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert_eq!(c.device_backend, DeviceBackend::Auto);
    assert_eq!(c.u2_jar, None);
    for (v, want) in [
        ("u2", DeviceBackend::U2),
        ("uiautomator", DeviceBackend::Uiautomator),
        ("auto", DeviceBackend::Auto),
    ] {
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("HOME", "/h"),
                ("CMAUTOBUY_DEVICE_BACKEND", v),
                ("CMAUTOBUY_U2_JAR", "/opt/u2.jar"),
            ]),
        )
        .unwrap();
        assert_eq!(c.device_backend, want);
        assert_eq!(c.device_backend.as_str(), v);
        assert_eq!(c.u2_jar, Some(PathBuf::from("/opt/u2.jar")));
    }
    let e = load(
        Overrides::default(),
        &env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICE_BACKEND", "adb")]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("device_backend"), "{e}");
}

#[test]
fn purchase_mode_and_self_test_goods_are_read_and_checked() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert_eq!(c.purchase_mode, PurchaseMode::Auto);
    assert_eq!(c.self_test_goods_id, None);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "purchase_mode = \"dry_run\"\nself_test_goods_id = \"602938475610\"\n",
    )
    .unwrap();
    let path = file.to_str().unwrap().to_string();
    let c = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(c.purchase_mode, PurchaseMode::DryRun);
    assert_eq!(c.self_test_goods_id.as_deref(), Some("602938475610"));
    // The environment overrides the file.
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_PURCHASE_MODE", "auto"),
            ("CMAUTOBUY_SELF_TEST_GOODS_ID", "123"),
        ]),
    )
    .unwrap();
    assert_eq!(c.purchase_mode, PurchaseMode::Auto);
    assert_eq!(c.self_test_goods_id.as_deref(), Some("123"));
    for (k, v, name) in [
        ("CMAUTOBUY_PURCHASE_MODE", "live", "purchase_mode"),
        (
            "CMAUTOBUY_SELF_TEST_GOODS_ID",
            "https://x/?goods_id=1",
            "self_test_goods_id",
        ),
        (
            "CMAUTOBUY_SELF_TEST_GOODS_ID",
            "1234567890123456789012345",
            "self_test_goods_id",
        ),
    ] {
        match load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)])) {
            Err(ConfigError::Value { name: n, .. }) => assert_eq!(n, name, "{k}={v}"),
            other => panic!("{k}={v}: {other:?}"),
        }
    }
}

#[test]
fn allow_live_is_off_unless_configured() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert!(!c.allow_live, "live purchases are never on by default");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "allow_live = true\n").unwrap();
    let path = file.to_str().unwrap().to_string();
    let c = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap();
    assert!(c.allow_live);
    // The environment overrides the file, both ways.
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_ALLOW_LIVE", "0"),
        ]),
    )
    .unwrap();
    assert!(!c.allow_live);
    let err = load(
        Overrides::default(),
        &env_of(&[("HOME", "/h"), ("CMAUTOBUY_ALLOW_LIVE", "yes please")]),
    )
    .expect_err("not a boolean");
    assert!(err.to_string().contains("CMAUTOBUY_ALLOW_LIVE"), "{err}");
    // A string in the file is a parse error, not "true".
    std::fs::write(&file, "allow_live = \"true\"\n").unwrap();
    assert!(matches!(
        load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")])
        ),
        Err(ConfigError::Parse { .. })
    ));
}

#[test]
fn lock_dir_defaults_to_the_shared_directory_and_has_an_env_twin() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert_eq!(c.lock_dir, crate::lock::default_lock_dir());
    let c = load(
        Overrides::default(),
        &env_of(&[("HOME", "/h"), ("CMAUTOBUY_LOCK_DIR", "/run/x")]),
    )
    .unwrap();
    assert_eq!(c.lock_dir, PathBuf::from("/run/x"));
}

#[test]
fn platform_directories_by_convention() {
    let unix = platform_dirs(Os::Unix, &env_of(&[("HOME", "/home/op")])).unwrap();
    assert_eq!(unix.data, PathBuf::from("/home/op/.local/share/cmautobuy"));
    assert_eq!(unix.config, PathBuf::from("/home/op/.config/cmautobuy"));
    assert_eq!(
        unix.logs,
        PathBuf::from("/home/op/.local/state/cmautobuy/logs")
    );
    let xdg = platform_dirs(
        Os::Unix,
        &env_of(&[
            ("HOME", "/home/op"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_CONFIG_HOME", "/c"),
            ("XDG_STATE_HOME", "/s"),
        ]),
    )
    .unwrap();
    assert_eq!(
        (xdg.data, xdg.config, xdg.logs),
        (
            PathBuf::from("/d/cmautobuy"),
            PathBuf::from("/c/cmautobuy"),
            PathBuf::from("/s/cmautobuy/logs")
        )
    );
    // A relative XDG value is ignored (the spec says so), never the current directory.
    let rel = platform_dirs(
        Os::Unix,
        &env_of(&[("HOME", "/home/op"), ("XDG_DATA_HOME", "rel")]),
    )
    .unwrap();
    assert_eq!(rel.data, PathBuf::from("/home/op/.local/share/cmautobuy"));
    let mac = platform_dirs(Os::MacOs, &env_of(&[("HOME", "/Users/op")])).unwrap();
    assert_eq!(
        mac.data,
        PathBuf::from("/Users/op/Library/Application Support/cmautobuy")
    );
    assert_eq!(mac.logs, PathBuf::from("/Users/op/Library/Logs/cmautobuy"));
    let win = platform_dirs(
        Os::Windows,
        &env_of(&[
            ("APPDATA", "C:/Users/op/AppData/Roaming"),
            ("LOCALAPPDATA", "C:/Users/op/AppData/Local"),
        ]),
    )
    .unwrap();
    assert_eq!(
        win.data,
        PathBuf::from("C:/Users/op/AppData/Roaming/cmautobuy/data")
    );
    assert_eq!(
        win.logs,
        PathBuf::from("C:/Users/op/AppData/Local/cmautobuy/logs")
    );
    for os in [Os::Unix, Os::MacOs, Os::Windows] {
        assert_eq!(platform_dirs(os, &env_of(&[])), None, "{os:?}");
    }
}

#[test]
fn without_a_home_the_data_directory_must_be_given_never_the_current_directory() {
    let err = load(Overrides::default(), &env_of(&[])).unwrap_err();
    assert!(err.to_string().contains("--data-dir"), "{err}");
    let c = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_DATA_DIR", "/srv/phone-1")]),
    )
    .unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/srv/phone-1"));
    // One log directory per data directory when the data directory is given …
    assert_eq!(c.resources.log_dir, PathBuf::from("/srv/phone-1/logs"));
    // … the platform's log directory with the platform's data directory.
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    if Os::current() == Os::Unix {
        assert_eq!(c.data_dir, PathBuf::from("/h/.local/share/cmautobuy"));
        assert_eq!(
            c.resources.log_dir,
            PathBuf::from("/h/.local/state/cmautobuy/logs")
        );
    }
}

#[test]
fn webhooks_come_from_the_file_and_never_print_their_urls() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        r#"
alert_dedup_window_mins = 5
alert_no_success_after_mins = 0
daily_summary_at = "08:30+08:00"
console_addr = "127.0.0.1:0"

[[webhook]]
url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=WECOM-KEY-1"
format = "wecom"

[[webhook]]
url = "https://oapi.dingtalk.com/robot/send?access_token=DING-TOKEN-2"
format = "dingtalk"
secret = "SEC-DING-3"
kinds = ["alert", "daily_summary"]
"#,
    )
    .unwrap();
    let path = file.to_str().unwrap().to_string();
    let c = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(c.notify.webhooks.len(), 2);
    assert_eq!(c.notify.dedup_window, Duration::from_secs(300));
    assert_eq!(c.notify.no_success_after, None);
    assert_eq!(
        c.notify.device_paused_after,
        Some(Duration::from_secs(600)),
        "default"
    );
    assert!(c.notify.daily_summary.is_some());
    assert_eq!(c.console, ConsoleAddr::At("127.0.0.1:0".parse().unwrap()));
    let shown = format!("{c:?}");
    for secret in ["WECOM-KEY-1", "DING-TOKEN-2", "SEC-DING-3"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    // A non-loopback console and a bad webhook are typed errors naming the key.
    let err = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_CONSOLE_ADDR", "0.0.0.0:9464"),
        ]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("console_addr"), "{err}");
    std::fs::write(&file, "[[webhook]]\nurl = \"ftp://x/?key=K\"\n").unwrap();
    let err = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("webhook #1"), "{err}");
    assert!(!err.to_string().contains("key=K"), "{err}");
    // Defaults: no webhook, the console on the default ports.
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert!(c.notify.webhooks.is_empty());
    assert_eq!(c.console, ConsoleAddr::Default);
}

/// A console password shorter than 10 characters is refused with its code, from the
/// file or the environment alike; 10 is enough.
#[test]
fn a_short_console_password_is_refused() {
    for pw in ["short", "123456789", "九个字的控制台密码"] {
        let err = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_CONSOLE_PASSWORD", pw)]),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("CONSOLE_PASSWORD_TOO_SHORT"), "{pw}: {text}");
        assert!(text.contains("console_password"), "{text}");
        assert!(!text.contains(pw), "the password is not quoted: {text}");
    }
    let c = load(
        Overrides::default(),
        &env_of(&[("HOME", "/h"), ("CMAUTOBUY_CONSOLE_PASSWORD", "0123456789")]),
    )
    .unwrap();
    assert!(c.console_password.is_some());
}

#[test]
fn pacing_keys_default_and_override() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    assert_eq!(c.pacing, PacingConfig::default());
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("HOME", "/h"),
            ("CMAUTOBUY_MIN_TASK_GAP_SECS", "0"),
            ("CMAUTOBUY_LIVE_ORDERS_PER_HOUR", "0"),
            ("CMAUTOBUY_LIVE_ORDERS_PER_DAY", "7"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.pacing,
        PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: 0,
            live_orders_per_day: 7,
        }
    );
    for (k, v) in [
        ("CMAUTOBUY_MIN_TASK_GAP_SECS", "-1"),
        ("CMAUTOBUY_LIVE_ORDERS_PER_HOUR", "-1"),
        ("CMAUTOBUY_LIVE_ORDERS_PER_DAY", "many"),
    ] {
        assert!(
            matches!(
                load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)])),
                Err(ConfigError::Value { .. })
            ),
            "{k}={v}"
        );
    }
}

#[test]
fn resource_keys_with_defaults_and_validation() {
    let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
    let r = &c.resources;
    assert_eq!((r.log_file_max_bytes, r.log_files), (10 * MB, 5));
    assert_eq!(r.min_free_disk_bytes, 500 * MB);
    assert_eq!(
        r.outbox_compact_after,
        Some(Duration::from_secs(30 * 86_400))
    );
    assert_eq!(c.retention.max_total_bytes, Some(2048 * MB));
    assert_eq!(
        c.retention.evidence_max_age,
        Some(Duration::from_secs(180 * 86_400))
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "log_dir = \"/var/log/cm\"\nlog_file_max_mb = 1\nlog_files = 2\n\
         artifacts_max_total_mb = 0\nartifacts_evidence_max_age_days = 365\n\
         outbox_compact_after_days = 0\nmin_free_disk_mb = 100\n",
    )
    .unwrap();
    let path = file.to_str().unwrap().to_string();
    let c = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_LOG_FILES", "3"),
        ]),
    )
    .unwrap();
    let r = &c.resources;
    assert_eq!(r.log_dir, PathBuf::from("/var/log/cm"));
    assert_eq!((r.log_file_max_bytes, r.log_files), (MB, 3));
    assert_eq!(r.outbox_compact_after, None);
    assert_eq!(r.min_free_disk_bytes, 100 * MB);
    assert_eq!(c.retention.max_total_bytes, None);
    assert_eq!(
        c.retention.evidence_max_age,
        Some(Duration::from_secs(365 * 86_400))
    );
    for (k, v) in [
        ("CMAUTOBUY_MIN_FREE_DISK_MB", "-1"),
        ("CMAUTOBUY_ARTIFACTS_MAX_TOTAL_MB", "lots"),
        ("CMAUTOBUY_LOG_FILE_MAX_MB", "0.0001"),
        ("CMAUTOBUY_OUTBOX_COMPACT_AFTER_DAYS", "-2"),
        ("CMAUTOBUY_LOG_FILES", "-1"),
    ] {
        let err = load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)]))
            .expect_err(&format!("{k}={v}"));
        assert!(matches!(err, ConfigError::Value { .. }), "{k}={v}: {err}");
    }
}

#[test]
fn bad_numbers_are_reported() {
    let env = env_of(&[("CMAUTOBUY_POLL_INTERVAL_SECS", "soon")]);
    assert!(matches!(
        load(Overrides::default(), &env),
        Err(ConfigError::Value { .. })
    ));
}

#[test]
fn several_phones_from_flags_the_list_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "device = \"one\"\ndevices = [\"A\", \"B\", \"A\", \" \"]\n",
    )
    .unwrap();
    let env = env_of(&[("CMAUTOBUY_CONFIG", file.to_str().unwrap()), ("HOME", "/h")]);
    // The list wins over `device`; duplicates and blanks dropped.
    let c = load(Overrides::default(), &env).unwrap();
    assert_eq!(
        (c.device.as_deref(), c.devices.as_slice()),
        (None, &["A".to_string(), "B".to_string()][..])
    );
    // One --device: that phone alone.
    let one = Overrides::default().text("device", "--device", Some("X"));
    let c = load(one, &env).unwrap();
    assert_eq!((c.device.as_deref(), c.devices.len()), (Some("X"), 0));
    // --device repeated.
    let two = Overrides::default().list("devices", "--device", &["X".into(), "Y".into()]);
    let c = load(two, &env).unwrap();
    assert_eq!(c.devices, ["X", "Y"]);
    // The environment, comma-separated; a list of one is one phone.
    let env = env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICES", "P,Q")]);
    assert_eq!(
        load(Overrides::default(), &env).unwrap().devices,
        ["P", "Q"]
    );
    let env = env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICES", "P")]);
    let c = load(Overrides::default(), &env).unwrap();
    assert_eq!((c.device.as_deref(), c.devices.len()), (Some("P"), 0));
}

fn file_with(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap().to_string();
    (dir, path)
}

/// Every key of the file (the public names: README's table, the guides), its kind, and
/// its environment twin `CMAUTOBUY_<KEY>` — all from the sections, written once.
#[test]
fn every_key_has_its_section_its_kind_and_its_environment_twin() {
    use layers::Kind::*;
    let want = [
        ("data_dir", Text),
        ("admin_url", Text),
        ("token", Text),
        ("device", Text),
        ("devices", List),
        ("name", Text),
        ("poll_interval_secs", Float),
        ("connect_timeout_secs", Float),
        ("request_timeout_secs", Float),
        ("max_body_bytes", Int),
        ("log", Text),
        ("log_format", Text),
        ("log_dir", Text),
        ("log_file_max_mb", Float),
        ("log_files", Int),
        ("artifacts_keep_attempts", Int),
        ("artifacts_max_age_days", Float),
        ("artifacts_max_total_mb", Float),
        ("artifacts_evidence_max_age_days", Float),
        ("outbox_compact_after_days", Float),
        ("min_free_disk_mb", Float),
        ("backups_keep", Int),
        ("allow_live", Bool),
        ("purchase_mode", Text),
        ("self_test_goods_id", Text),
        ("max_clock_skew_secs", Float),
        ("min_task_gap_secs", Float),
        ("live_orders_per_hour", Int),
        ("live_orders_per_day", Int),
        ("lock_dir", Text),
        ("device_check_max_age_secs", Float),
        ("device_probe_max_secs", Float),
        ("retry_wait_gap_secs", Float),
        ("retry_wait_gap_max_secs", Float),
        ("reconcile_wait_max_secs", Float),
        ("unrecognized_pages_pause_after", Int),
        ("unrecognized_rate_count", Int),
        ("unrecognized_rate_window", Int),
        ("pdd_version_gate", Bool),
        ("account_check", Bool),
        ("battery_min_percent", Int),
        ("battery_max_temp_c", Int),
        ("expected_address", List),
        ("device_backend", Text),
        ("u2_jar", Text),
        ("console_addr", Text),
        ("console_password", Text),
        ("alert_dedup_window_mins", Float),
        ("alert_device_paused_after_mins", Float),
        ("alert_no_success_after_mins", Float),
        ("daily_summary_at", Text),
        ("webhook_max_attempts", Int),
        ("webhook_timeout_secs", Float),
        ("webhook", List),
    ];
    let schema = Settings::schema();
    let mut keys: Vec<&str> = schema.fields().iter().map(|f| f.key).collect();
    keys.sort_unstable();
    let mut expected: Vec<&str> = want.iter().map(|(k, _)| *k).collect();
    expected.sort_unstable();
    assert_eq!(keys, expected);
    for (key, kind) in want {
        let f = schema.field(key).unwrap();
        assert_eq!(f.kind, kind, "{key}");
        // Lists of tables have no environment form.
        assert_eq!(f.env, key != "webhook", "{key}");
    }
    // A value for every environment twin at once: each is read, and all load.
    let sample = |key: &str, kind| -> String {
        match (key, kind) {
            ("admin_url", _) => "http://admin.example".into(),
            ("purchase_mode", _) => "dry_run".into(),
            ("device_backend", _) => "uiautomator".into(),
            ("log_format", _) => "json".into(),
            ("self_test_goods_id", _) => "602938475610".into(),
            ("console_addr", _) => "127.0.0.1:0".into(),
            ("console_password", _) => "0123456789".into(),
            ("daily_summary_at", _) => "08:00+08:00".into(),
            ("log_file_max_mb", _) => "2".into(),
            (_, Bool) => "false".into(),
            (_, Int) => "7".into(),
            (_, Float) => "7".into(),
            (_, List) => "A,B".into(),
            _ => "/srv/x".into(),
        }
    };
    let mut vars: Vec<(String, String)> = want
        .iter()
        .filter(|(k, _)| *k != "webhook")
        .map(|(k, kind)| (format!("CMAUTOBUY_{}", k.to_uppercase()), sample(k, *kind)))
        .collect();
    vars.push(("HOME".into(), "/h".into()));
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let env = env_of(&pairs);
    let layer = Layer::from_env(&schema, &env).unwrap();
    for (key, _) in want.iter().filter(|(k, _)| *k != "webhook") {
        assert_eq!(
            layer.origin(key),
            Some(&Origin::Env(format!("CMAUTOBUY_{}", key.to_uppercase()))),
            "{key}"
        );
    }
    let c = load(Overrides::default(), &env).unwrap();
    assert_eq!(c.poll_interval, Duration::from_secs(7));
    assert_eq!(c.backups_keep, 7);
    assert_eq!(c.devices, ["A", "B"]);
    assert_eq!(c.device_backend, DeviceBackend::Uiautomator);
    assert!(!c.gate.account_check);
    assert_eq!(c.data_dir, PathBuf::from("/srv/x"));
}

/// A key no section has: its line and column, and the key it most likely means.
#[test]
fn an_unknown_key_names_its_line_and_the_key_it_meant() {
    let (_d, path) = file_with("admin_url = \"http://a\"\n  poll_intervall_secs = 3\n");
    let err = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap_err();
    match &err {
        ConfigError::UnknownKey {
            key,
            origin: Origin::File { line, column, .. },
            suggestion,
        } => {
            assert_eq!(key, "poll_intervall_secs");
            assert_eq!((*line, *column), (2, 3));
            assert_eq!(suggestion.as_deref(), Some("poll_interval_secs"));
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains(&format!("{path}:2:3")), "{text}");
    assert!(
        text.contains("did you mean `poll_interval_secs`?"),
        "{text}"
    );
    for (typo, meant) in [
        ("devcie_backend", "device_backend"),
        ("tokne", "token"),
        ("adminurl", "admin_url"),
        ("expected_adress", "expected_address"),
    ] {
        let (_d, path) = file_with(&format!("{typo} = 1\n"));
        let err = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("did you mean `{meant}`?")),
            "{typo}: {err}"
        );
    }
    // Nothing close: no guess.
    let (_d, path) = file_with("colour = \"blue\"\n");
    let err = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap_err();
    assert!(
        matches!(
            &err,
            ConfigError::UnknownKey {
                suggestion: None,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("did you mean"), "{err}");
}

/// A syntax error and a value of the wrong type: line, column and key, never the value.
#[test]
fn a_file_error_names_its_line_column_and_key() {
    let (_d, path) = file_with("name = \"x\"\n\nallow_live = \"yes-secret\"\n");
    let err = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap_err();
    match &err {
        ConfigError::Parse { line, column, .. } => assert_eq!((*line, *column), (3, 1)),
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains(&format!("{path}:3:1")), "{text}");
    assert!(text.contains("`allow_live`"), "{text}");
    assert!(!text.contains("yes-secret"), "{text}");

    let (_d, path) = file_with("name = \"x\"\npoll_interval_secs = 3 x\n");
    let err = load(
        Overrides::default(),
        &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
    )
    .unwrap_err();
    match &err {
        ConfigError::Parse { line, column, .. } => assert_eq!((*line, *column), (2, 24)),
        other => panic!("{other:?}"),
    }
}

/// A value refused for what it means names where it came from: the file's line and
/// column, the environment variable, or the flag.
#[test]
fn a_refused_value_names_where_it_came_from() {
    let (_d, path) = file_with("name = \"x\"\nartifacts_keep_attempts = 0\n");
    let env = [("CMAUTOBUY_CONFIG", path.as_str()), ("HOME", "/h")];
    let err = load(Overrides::default(), &env_of(&env)).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "invalid value for artifacts_keep_attempts ({path}:2:1): "
        )),
        "{err}"
    );
    let err = load(
        Overrides::default(),
        &env_of(&[
            ("CMAUTOBUY_CONFIG", &path),
            ("HOME", "/h"),
            ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "0"),
        ]),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("artifacts_keep_attempts (CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS)"),
        "{err}"
    );
    let err = load(
        Overrides::default().number("poll_interval_secs", "--poll-interval", Some(0.0)),
        &env_of(&[("HOME", "/h")]),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("invalid value for poll_interval_secs (--poll-interval)"),
        "{err}"
    );
}

/// The Admin's base URL only: no scheme, or the API's path appended, is refused where it
/// is given, with the URL to write.
#[test]
fn a_bad_admin_url_is_refused_at_load_with_the_fix() {
    let fix = "write http://127.0.0.1:18080 — the client adds /api/v1/client itself";
    let (_d, path) = file_with("admin_url = \"127.0.0.1:18080\"\n");
    let env = [("CMAUTOBUY_CONFIG", path.as_str()), ("HOME", "/h")];
    let err = load(Overrides::default(), &env_of(&env)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("admin_url ({path}:1:1)")), "{text}");
    assert!(text.contains(fix), "{text}");
    let env = [
        ("HOME", "/h"),
        ("CMAUTOBUY_ADMIN_URL", "http://127.0.0.1:18080/api/v1"),
    ];
    let text = load(Overrides::default(), &env_of(&env))
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("CMAUTOBUY_ADMIN_URL") && text.contains(fix),
        "{text}"
    );
    let text = load(
        Overrides::default().text("admin_url", "--admin", Some("127.0.0.1:18080")),
        &env_of(&[("HOME", "/h")]),
    )
    .unwrap_err()
    .to_string();
    assert!(text.contains("--admin") && text.contains(fix), "{text}");
    // The base URL is taken as given (a saved token is bound to it as saved).
    let c = load(
        Overrides::default().text("admin_url", "--admin", Some("http://127.0.0.1:18080/")),
        &env_of(&[("HOME", "/h")]),
    )
    .unwrap();
    assert_eq!(c.admin_url.as_deref(), Some("http://127.0.0.1:18080/"));
}

/// `rehearse` reads a named file (and the environment) but never the platform's default
/// config, which holds the machine's production settings.
#[test]
fn a_rehearsal_reads_only_a_named_file() {
    let home = tempfile::tempdir().unwrap();
    let conf = home.path().join(".config/cmautobuy");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("config.toml"), "device_backend = \"u2\"\n").unwrap();
    let home_s = home.path().to_str().unwrap().to_string();
    let env = [("HOME", home_s.as_str())];
    if Os::current() == Os::Unix {
        let c = load(Overrides::default(), &env_of(&env)).unwrap();
        assert_eq!(c.device_backend, DeviceBackend::U2, "run reads it");
    }
    let c = load_with(Overrides::default(), &env_of(&env), Sources::NamedFileOnly).unwrap();
    assert_eq!(c.device_backend, DeviceBackend::Auto);
    let (_d, path) = file_with("device_backend = \"uiautomator\"\n");
    let c = load_with(
        Overrides::default().with_config(Some(path.into())),
        &env_of(&env),
        Sources::NamedFileOnly,
    )
    .unwrap();
    assert_eq!(c.device_backend, DeviceBackend::Uiautomator);
}

/// `doctor`'s fallbacks: without the file, then without the environment's settings — but
/// still in the data directory the environment names.
#[test]
fn the_fallback_sources_leave_out_what_did_not_load() {
    let (_d, path) = file_with("devcie_backend = \"u2\"\n");
    let env = [
        ("CMAUTOBUY_CONFIG", path.as_str()),
        ("HOME", "/h"),
        ("CMAUTOBUY_DATA_DIR", "/srv/phone-1"),
        ("CMAUTOBUY_POLL_INTERVAL_SECS", "soon"),
    ];
    assert!(matches!(
        load_with(Overrides::default(), &env_of(&env), Sources::All),
        Err(ConfigError::UnknownKey { .. })
    ));
    assert!(matches!(
        load_with(Overrides::default(), &env_of(&env), Sources::NoFile),
        Err(ConfigError::Value { .. })
    ));
    let c = load_with(Overrides::default(), &env_of(&env), Sources::FlagsOnly).unwrap();
    assert_eq!(c.data_dir, PathBuf::from("/srv/phone-1"));
    assert_eq!(c.poll_interval, Duration::from_secs(10));
    assert_eq!(c.file, None);
}
