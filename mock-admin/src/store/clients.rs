//! `clients`: upsert by client id (a §4.1 registration, or implicitly on a §5 claim),
//! `last_seen_at`, and the rows the operator lists.

use super::clock::now;
use crate::db::immediate;
use crate::error::StoreError;
use cmautobuy_contract::ClientProfile;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// Minutes since `last_seen_at` within which a client counts as online (data model §9).
pub const ONLINE_MINUTES: i64 = 10;

/// A `clients` row. `supported_types` and `capabilities` are the JSON text stored from
/// the client's last profile.
#[derive(Debug, Clone)]
pub struct ClientRow {
    pub client_id: String,
    pub name: Option<String>,
    pub device: DeviceRow,
    pub supported_types: Option<String>,
    pub capabilities: Option<String>,
    pub last_seen_at: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The device columns of a [`ClientRow`].
#[derive(Debug, Clone)]
pub struct DeviceRow {
    pub address: Option<String>,
    pub platform: Option<String>,
    pub pdd_package: Option<String>,
}

impl ClientRow {
    /// Online = seen within [`ONLINE_MINUTES`] of `now` (derived, never stored).
    pub fn online_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        cmautobuy_contract::time::parse_rfc3339(&self.last_seen_at)
            .map(|t| now.signed_duration_since(t) <= chrono::Duration::minutes(ONLINE_MINUTES))
            .unwrap_or(false)
    }
}

/// Upsert by client id (§4.1, §5). `explicit` is a §4.1 registration: a non-empty name
/// then updates the stored one. A claim's implicit registration only names new clients.
/// Returns the client's creation time.
pub(super) fn upsert_client(
    tx: &Transaction<'_>,
    client_id: &str,
    p: &ClientProfile,
    explicit: bool,
    ts: &str,
) -> Result<String, StoreError> {
    let name = p
        .client
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let device = p.device.clone().unwrap_or_default();
    let caps = serde_json::to_string(&p.capabilities)?;
    let types = serde_json::to_string(&p.supported_types)?;
    let existing: Option<String> = tx
        .prepare_cached("SELECT created_at FROM clients WHERE client_id = ?1")?
        .query_row([client_id], |r| r.get(0))
        .optional()?;
    match existing {
        None => {
            tx.execute(
                "INSERT INTO clients (client_id, name, device_address, platform, pdd_package,
                    supported_types, capabilities, last_seen_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?8)",
                params![
                    client_id,
                    name.unwrap_or(client_id),
                    device.address,
                    device.platform,
                    device.pdd_package,
                    types,
                    caps,
                    ts
                ],
            )?;
            Ok(ts.to_string())
        }
        Some(created) => {
            let new_name = if explicit { name } else { None };
            tx.prepare_cached(
                "UPDATE clients SET name = COALESCE(?2, name),
                    device_address = COALESCE(?3, device_address),
                    platform = COALESCE(?4, platform),
                    pdd_package = COALESCE(?5, pdd_package),
                    supported_types = ?6, capabilities = ?7, last_seen_at = ?8, updated_at = ?8
                 WHERE client_id = ?1",
            )?
            .execute(params![
                client_id,
                new_name,
                device.address,
                device.platform,
                device.pdd_package,
                types,
                caps,
                ts
            ])?;
            Ok(created)
        }
    }
}

/// Refreshes `last_seen_at` of a known client (data model §9: every call refreshes it).
pub(super) fn touch_client(
    tx: &Transaction<'_>,
    client_id: &str,
    ts: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE clients SET last_seen_at = ?2 WHERE client_id = ?1",
        params![client_id, ts],
    )?;
    Ok(())
}

/// Refreshes `last_seen_at` after a call that was refused (its own transaction rolled
/// back): every call counts as a sign of life (data model §9).
pub fn touch(conn: &mut Connection, client_id: &str) -> Result<(), StoreError> {
    let tx = immediate(conn)?;
    touch_client(&tx, client_id, &now())?;
    tx.commit()?;
    Ok(())
}

/// `PUT /registration` (§4.1). Never reads or touches tasks. Returns `registered_at`:
/// the client's first registration.
pub fn register(
    conn: &mut Connection,
    client_id: &str,
    p: &ClientProfile,
) -> Result<String, StoreError> {
    let tx = immediate(conn)?;
    let ts = now();
    let created = upsert_client(&tx, client_id, p, true, &ts)?;
    tx.commit()?;
    Ok(created)
}

/// Every client, by id.
pub fn list_clients(conn: &mut Connection) -> Result<Vec<ClientRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT client_id, name, device_address, platform, pdd_package, supported_types,
            capabilities, last_seen_at, created_at, updated_at FROM clients ORDER BY client_id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ClientRow {
                client_id: r.get(0)?,
                name: r.get(1)?,
                device: DeviceRow {
                    address: r.get(2)?,
                    platform: r.get(3)?,
                    pdd_package: r.get(4)?,
                },
                supported_types: r.get(5)?,
                capabilities: r.get(6)?,
                last_seen_at: r.get(7)?,
                created_at: r.get(8)?,
                updated_at: r.get(9)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
