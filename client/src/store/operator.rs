//! What the operator set on the console's 设置 page for going live: the
//! address fingerprint (`expected_address`), the self-test's goods
//! (`self_test_goods_id`), `purchase_mode`, webhooks and the console password's hash —
//! rows of the settings table under `operator.*`, so they survive a restart and every
//! reader (claim loop, purchase job, notifier, `register`, `status`) sees them at its
//! next read without one.
//!
//! The store keeps them as set; how they combine with the config file is the reader's
//! (`runner::LivePolicy::with_operator`, `OperatorSettings::expected_address_or`,
//! `notify::Notifier`), and the console page shows that precedence. Webhooks are kept as
//! the JSON array of `[[webhook]]` tables the notifier parses (`url`, `format`, `secret`,
//! `name`): the URL and the signing secret are secrets (the settings table already holds
//! the token; the file is `0600`), never printed by `Debug`.

use chrono::Utc;
use rusqlite::params;

use super::db::{get_setting, put_setting, Store};
use super::error::{Result, StoreError};

const KEY_EXPECTED_ADDRESS: &str = "operator.expected_address";
const KEY_SELF_TEST_GOODS_ID: &str = "operator.self_test_goods_id";
const KEY_PURCHASE_MODE: &str = "operator.purchase_mode";
const KEY_WEBHOOKS: &str = "operator.webhooks";
const KEY_CONSOLE_PASSWORD: &str = "operator.console_password";

/// What the operator set on the console (each `None`: not set there — the config
/// file's value holds).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OperatorSettings {
    /// The delivery-address fingerprint (each part trimmed, none empty).
    pub expected_address: Option<Vec<String>>,
    pub self_test_goods_id: Option<String>,
    /// `auto` or `dry_run`.
    pub purchase_mode: Option<String>,
    /// The console's webhooks: a JSON array of `[[webhook]]` tables (secrets inside).
    pub webhooks_json: Option<String>,
    /// The console password's PHC hash (`console::auth::PasswordHash::to_phc`).
    pub console_password_hash: Option<String>,
}

impl std::fmt::Debug for OperatorSettings {
    // Webhook URLs carry a bot's key: counted, never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorSettings")
            .field(
                "expected_address",
                &self.expected_address.as_ref().map(Vec::len),
            )
            .field("self_test_goods_id", &self.self_test_goods_id)
            .field("purchase_mode", &self.purchase_mode)
            .field("webhooks", &self.webhooks_json.is_some())
            .field("console_password", &self.console_password_hash.is_some())
            .finish()
    }
}

impl OperatorSettings {
    /// The fingerprint in effect: the console's when it set one, else the file's.
    pub fn expected_address_or(&self, file: &[String]) -> Vec<String> {
        match &self.expected_address {
            Some(parts) if !parts.is_empty() => parts.clone(),
            _ => file.to_vec(),
        }
    }

    /// Whether the console set `purchase_mode = dry_run`.
    pub fn dry_run(&self) -> bool {
        self.purchase_mode.as_deref() == Some("dry_run")
    }
}

fn put_or_clear(conn: &rusqlite::Connection, key: &str, value: Option<&str>) -> Result<()> {
    match value {
        Some(v) => put_setting(conn, key, v, Utc::now()),
        None => {
            conn.execute("DELETE FROM settings WHERE key = ?1", params![key])?;
            Ok(())
        }
    }
}

impl Store {
    /// What the operator set on the console.
    pub fn operator_settings(&self) -> Result<OperatorSettings> {
        let conn = self.lock();
        let expected_address = match get_setting(&conn, KEY_EXPECTED_ADDRESS)? {
            Some(json) => Some(
                serde_json::from_str::<Vec<String>>(&json)
                    .map_err(|e| StoreError::Corrupt(format!("{KEY_EXPECTED_ADDRESS}: {e}")))?,
            ),
            None => None,
        };
        Ok(OperatorSettings {
            expected_address,
            self_test_goods_id: get_setting(&conn, KEY_SELF_TEST_GOODS_ID)?,
            purchase_mode: get_setting(&conn, KEY_PURCHASE_MODE)?,
            webhooks_json: get_setting(&conn, KEY_WEBHOOKS)?,
            console_password_hash: get_setting(&conn, KEY_CONSOLE_PASSWORD)?,
        })
    }

    /// Sets (`Some`, non-empty parts) or clears the console's address fingerprint.
    pub fn set_operator_expected_address(&self, parts: Option<&[String]>) -> Result<()> {
        let json = match parts {
            Some(p) if !p.is_empty() => Some(
                serde_json::to_string(p)
                    .map_err(|e| StoreError::Corrupt(format!("{KEY_EXPECTED_ADDRESS}: {e}")))?,
            ),
            _ => None,
        };
        put_or_clear(&self.lock(), KEY_EXPECTED_ADDRESS, json.as_deref())
    }

    /// Sets or clears the console's self-test goods id.
    pub fn set_operator_self_test_goods_id(&self, goods_id: Option<&str>) -> Result<()> {
        put_or_clear(&self.lock(), KEY_SELF_TEST_GOODS_ID, goods_id)
    }

    /// Sets (`auto` / `dry_run`) or clears the console's purchase mode.
    pub fn set_operator_purchase_mode(&self, mode: Option<&str>) -> Result<()> {
        put_or_clear(&self.lock(), KEY_PURCHASE_MODE, mode)
    }

    /// Sets or clears the console's webhooks (a JSON array of `[[webhook]]` tables).
    pub fn set_operator_webhooks_json(&self, json: Option<&str>) -> Result<()> {
        put_or_clear(&self.lock(), KEY_WEBHOOKS, json)
    }

    /// Sets or clears the console password's hash (PHC string; never the password).
    pub fn set_console_password_hash(&self, phc: Option<&str>) -> Result<()> {
        put_or_clear(&self.lock(), KEY_CONSOLE_PASSWORD, phc)
    }

    /// The webhook URLs and signing secrets the console saved in the store at `path`,
    /// read without creating, migrating or writing anything (`diagnose-bundle` scrubs
    /// them out of what it packs, as it does the token). `Ok(empty)`: no store there, or
    /// none saved.
    pub fn saved_operator_secrets_at(path: &std::path::Path) -> Result<Vec<String>> {
        if !path.is_file() {
            return Ok(Vec::new());
        }
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(super::db::BUSY_TIMEOUT)?;
        let Some(json) = get_setting(&conn, KEY_WEBHOOKS)? else {
            return Ok(Vec::new());
        };
        let hooks: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap_or_default();
        Ok(hooks
            .iter()
            .flat_map(|h| [h["url"].as_str(), h["secret"].as_str()])
            .flatten()
            .map(str::to_string)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_settings_are_saved_cleared_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        let s = Store::open(&path).unwrap();
        assert_eq!(s.operator_settings().unwrap(), OperatorSettings::default());
        let parts = vec!["王小明".to_string(), "文三路90号".to_string()];
        s.set_operator_expected_address(Some(&parts)).unwrap();
        s.set_operator_self_test_goods_id(Some("602938475610"))
            .unwrap();
        s.set_operator_purchase_mode(Some("dry_run")).unwrap();
        s.set_operator_webhooks_json(Some(
            r#"[{"url":"https://qyapi.example/send?key=wh-KEY-1","format":"wecom","secret":"SEC-2"}]"#,
        ))
        .unwrap();
        s.set_console_password_hash(Some("$pbkdf2-sha256$i=1000,l=32$c2FsdHNhbHQ$AA"))
            .unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let o = s.operator_settings().unwrap();
        assert_eq!(o.expected_address.as_deref(), Some(&parts[..]));
        assert_eq!(o.expected_address_or(&["file".into()]), parts);
        assert!(o.dry_run());
        let dbg = format!("{o:?}");
        assert!(!dbg.contains("KEY-1") && !dbg.contains("SEC-2") && !dbg.contains("pbkdf2"));
        let mut secrets = Store::saved_operator_secrets_at(&path).unwrap();
        secrets.sort();
        assert_eq!(
            secrets,
            vec![
                "SEC-2".to_string(),
                "https://qyapi.example/send?key=wh-KEY-1".to_string()
            ]
        );
        // Cleared: the config file's values hold again.
        s.set_operator_expected_address(None).unwrap();
        s.set_operator_expected_address(Some(&[])).unwrap();
        s.set_operator_purchase_mode(None).unwrap();
        let o = s.operator_settings().unwrap();
        assert_eq!(o.expected_address, None);
        assert_eq!(
            o.expected_address_or(&["file".into()]),
            vec!["file".to_string()]
        );
        assert!(!o.dry_run());
        assert!(
            Store::saved_operator_secrets_at(&dir.path().join("none.sqlite3"))
                .unwrap()
                .is_empty()
        );
    }
}
