//! The `sync:` service (file transfer): STAT, STA2, LST2, LIST, RECV, SEND, QUIT, on the
//! phone's in-memory files.

use std::sync::Arc;

use super::shared::Shared;
use super::stream::StreamIo;

/// Sync DATA chunks are at most 64 KiB (SYNC_DATA_MAX).
const SYNC_DATA_MAX: usize = 64 * 1024;
/// A pushed file may not exceed this (the phone keeps files in memory).
const MAX_PUSH: usize = 64 * 1024 * 1024;

/// Byte buffer over a stream's incoming data, for the sync protocol whose requests do not
/// respect WRTE boundaries (adb_client sends a request header and its path separately).
struct Incoming<'a> {
    io: &'a mut StreamIo,
    buf: Vec<u8>,
}

impl Incoming<'_> {
    async fn need(&mut self, n: usize) -> bool {
        while self.buf.len() < n {
            match self.io.read().await {
                Some(d) => self.buf.extend_from_slice(&d),
                None => return false,
            }
        }
        true
    }

    async fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        if !self.need(n).await {
            return None;
        }
        Some(self.buf.drain(..n).collect())
    }
}

fn sync_msg(id: &[u8; 4], words: &[u32]) -> Vec<u8> {
    let mut v = id.to_vec();
    for w in words {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v
}

fn sync_fail(msg: &str) -> Vec<u8> {
    let mut v = sync_msg(b"FAIL", &[msg.len() as u32]);
    v.extend_from_slice(msg.as_bytes());
    v
}

pub(crate) async fn sync(io: &mut StreamIo, shared: &Arc<Shared>) {
    let mut inc = Incoming {
        io,
        buf: Vec::new(),
    };
    loop {
        let Some(h) = inc.take(8).await else { return };
        let id = [h[0], h[1], h[2], h[3]];
        let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        if &id == b"QUIT" {
            return;
        }
        if !matches!(
            &id,
            b"STAT" | b"STA2" | b"LST2" | b"LIST" | b"RECV" | b"SEND"
        ) || len > 1024
        {
            let _ = inc
                .io
                .write(&sync_fail("unknown or oversized sync request"))
                .await;
            return;
        }
        let Some(p) = inc.take(len).await else { return };
        let path = String::from_utf8_lossy(&p).to_string();
        let ok = match &id {
            b"STAT" => {
                let st = shared.lock().stat(&path);
                let (m, s, t) = st.unwrap_or((0, 0, 0));
                inc.io
                    .write_packet(sync_msg(
                        b"STAT",
                        &[m, s.min(u64::from(u32::MAX)) as u32, t],
                    ))
                    .await
            }
            b"STA2" | b"LST2" => {
                let st = shared.lock().stat(&path);
                let mut v = id.to_vec();
                match st {
                    Some((m, s, t)) => {
                        v.extend_from_slice(&0u32.to_le_bytes()); // error
                        v.extend_from_slice(&1u64.to_le_bytes()); // dev
                        v.extend_from_slice(&1u64.to_le_bytes()); // ino
                        v.extend_from_slice(&m.to_le_bytes());
                        v.extend_from_slice(&1u32.to_le_bytes()); // nlink
                        v.extend_from_slice(&2000u32.to_le_bytes()); // uid
                        v.extend_from_slice(&2000u32.to_le_bytes()); // gid
                        v.extend_from_slice(&s.to_le_bytes());
                        for _ in 0..3 {
                            v.extend_from_slice(&i64::from(t).to_le_bytes());
                        }
                    }
                    None => {
                        v.extend_from_slice(&2u32.to_le_bytes()); // ENOENT
                        v.extend_from_slice(&[0u8; 64]);
                    }
                }
                inc.io.write_packet(v).await
            }
            b"LIST" => {
                let entries = shared.lock().list_dir(&path);
                let mut v = Vec::new();
                for (name, m, s, t) in entries {
                    v.extend_from_slice(&sync_msg(
                        b"DENT",
                        &[m, s.min(u64::from(u32::MAX)) as u32, t, name.len() as u32],
                    ));
                    v.extend_from_slice(name.as_bytes());
                }
                v.extend_from_slice(&sync_msg(b"DONE", &[0, 0, 0, 0]));
                inc.io.write(&v).await
            }
            b"RECV" => {
                let data = shared.lock().read_file(&path);
                match data {
                    None => {
                        let _ = inc
                            .io
                            .write_packet(sync_fail("No such file or directory"))
                            .await;
                        return;
                    }
                    Some(d) => {
                        // One DATA per WRTE and DONE on its own: adb_client looks for DONE
                        // at the end of a packet.
                        let room = SYNC_DATA_MAX
                            .min(inc.io.max_payload.saturating_sub(8))
                            .max(1);
                        let mut ok = true;
                        for c in d.chunks(room) {
                            let mut v = sync_msg(b"DATA", &[c.len() as u32]);
                            v.extend_from_slice(c);
                            if !inc.io.write_packet(v).await {
                                ok = false;
                                break;
                            }
                        }
                        ok && inc.io.write_packet(sync_msg(b"DONE", &[0])).await
                    }
                }
            }
            b"SEND" => {
                let target = path
                    .rsplit_once(',')
                    .map(|(p, _)| p)
                    .unwrap_or(&path)
                    .to_string();
                let mut file = Vec::new();
                loop {
                    let Some(h) = inc.take(8).await else { return };
                    let n = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
                    match &h[..4] {
                        b"DATA" if n <= SYNC_DATA_MAX && file.len() + n <= MAX_PUSH => {
                            let Some(d) = inc.take(n).await else { return };
                            file.extend_from_slice(&d);
                        }
                        b"DONE" => break,
                        _ => {
                            let _ = inc.io.write_packet(sync_fail("bad SEND data")).await;
                            return;
                        }
                    }
                }
                shared.lock().write_file(&target, file);
                inc.io.write_packet(sync_msg(b"OKAY", &[0])).await
            }
            _ => false,
        };
        if !ok {
            return;
        }
    }
}
