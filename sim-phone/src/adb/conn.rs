//! Accepting connections and reading their packets: header checks, CNXN negotiation, OPEN
//! of a service stream, WRTE/OKAY/CLSE routed to the stream's task. A malformed packet ends
//! its own connection only.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::packet::{
    checksum, encode, Packet, A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_SYNC, A_WRTE,
    MAX_PAYLOAD, MAX_PAYLOAD_V1, VERSION_MIN, VERSION_SKIP_CHECKSUM,
};
use super::service::{run_service, Service};
use super::shared::Shared;
use super::stream::{In, StreamIo};

/// Accept connections until `shutdown` turns true.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            r = listener.accept() => {
                let Ok((stream, _)) = r else {
                    // Out of descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                if *shared.offline.borrow() {
                    // An offline phone: the TCP connection dies before any packet.
                    drop(stream);
                    continue;
                }
                shared.lock().counters.connections += 1;
                let sh = shared.clone();
                let sd = shutdown.clone();
                tokio::spawn(async move {
                    let _ = connection(stream, sh, sd).await;
                });
            }
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
        }
    }
}

#[derive(Debug)]
enum ConnError {
    Io,
    Malformed,
}

impl From<std::io::Error> for ConnError {
    fn from(_: std::io::Error) -> Self {
        ConnError::Io
    }
}

async fn connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ConnError> {
    // Without NODELAY every small WRTE waits for the peer's delayed ACK (≈44 ms a command).
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let version = Arc::new(AtomicU32::new(VERSION_MIN));
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Packet>();
    let wv = version.clone();
    let writer = tokio::spawn(async move {
        while let Some(p) = out_rx.recv().await {
            let bytes = encode(&p, wv.load(Ordering::Acquire));
            if wr.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    let mut offline = shared.offline.subscribe();
    let mut streams: HashMap<u32, mpsc::UnboundedSender<In>> = HashMap::new();
    let mut next_id: u32 = 1;
    let mut max_payload = MAX_PAYLOAD_V1;
    let mut connected = false;
    let mut hdr = [0u8; 24];
    let mut filled = 0usize;
    let result = loop {
        // `read` (unlike `read_exact`) is cancellation-safe: a wake-up from the offline or
        // shutdown switch never loses half a header.
        tokio::select! {
            r = rd.read(&mut hdr[filled..]) => match r {
                Ok(0) | Err(_) => break Err(ConnError::Io),
                Ok(n) => filled += n,
            },
            _ = offline.changed() => {
                if *offline.borrow() { break Ok(()); }
            }
            _ = shutdown.changed() => {
                if *shutdown.borrow() { break Ok(()); }
            }
        }
        if filled < hdr.len() {
            continue;
        }
        filled = 0;
        let word = |i: usize| u32::from_le_bytes([hdr[i], hdr[i + 1], hdr[i + 2], hdr[i + 3]]);
        let (cmd, arg0, arg1, len, check, magic) =
            (word(0), word(4), word(8), word(12), word(16), word(20));
        let known = matches!(
            cmd,
            A_SYNC | A_CNXN | A_OPEN | A_OKAY | A_CLSE | A_WRTE | A_AUTH | A_STLS
        );
        if !known || magic != cmd ^ 0xffff_ffff || len > MAX_PAYLOAD {
            break Err(ConnError::Malformed);
        }
        let mut data = vec![0u8; len as usize];
        if rd.read_exact(&mut data).await.is_err() {
            break Err(ConnError::Io);
        }
        // Checksums matter only below version 0x01000001; a CNXN is judged by the version
        // it announces itself (nothing has been negotiated yet).
        let v = if cmd == A_CNXN {
            arg0
        } else {
            version.load(Ordering::Acquire)
        };
        if v < VERSION_SKIP_CHECKSUM && check != checksum(&data) {
            break Err(ConnError::Malformed);
        }
        match cmd {
            A_CNXN => {
                let v = arg0.clamp(VERSION_MIN, VERSION_SKIP_CHECKSUM);
                max_payload = arg1.clamp(MAX_PAYLOAD_V1, MAX_PAYLOAD);
                version.store(v, Ordering::Release);
                connected = true;
                let _ = out_tx.send(Packet {
                    cmd: A_CNXN,
                    arg0: v,
                    arg1: MAX_PAYLOAD,
                    data: shared.banner.as_bytes().to_vec(),
                });
            }
            A_OPEN => {
                if !connected || arg0 == 0 {
                    break Err(ConnError::Malformed);
                }
                let service: String = String::from_utf8_lossy(&data)
                    .trim_end_matches('\0')
                    .to_string();
                let our = next_id;
                next_id = next_id.wrapping_add(1).max(1);
                // Nothing listens on a `tcp:` port but a running uiautomator2 server.
                let refused = |k: &Service| match k {
                    Service::Tcp(port) => shared.lock().u2.listening_on(*port).is_none(),
                    _ => false,
                };
                let Some(kind) = Service::parse(&service).filter(|k| !refused(k)) else {
                    let _ = out_tx.send(Packet {
                        cmd: A_CLSE,
                        arg0: 0,
                        arg1: arg0,
                        data: Vec::new(),
                    });
                    continue;
                };
                let (in_tx, in_rx) = mpsc::unbounded_channel();
                // The host does not answer our CLSE, so forget streams whose service ended
                // here (a long-lived adb server connection would otherwise accumulate them).
                streams.retain(|_, tx| !tx.is_closed());
                streams.insert(our, in_tx);
                shared.lock().counters.streams += 1;
                let _ = out_tx.send(Packet {
                    cmd: A_OKAY,
                    arg0: our,
                    arg1: arg0,
                    data: Vec::new(),
                });
                let io = StreamIo {
                    our,
                    their: arg0,
                    out: out_tx.clone(),
                    rx: in_rx,
                    max_payload: max_payload as usize,
                    awaiting_ok: false,
                    stash: VecDeque::new(),
                };
                let sh = shared.clone();
                tokio::spawn(async move {
                    run_service(kind, io, sh).await;
                });
            }
            A_WRTE => {
                if let Some(tx) = streams.get(&arg1) {
                    if tx.send(In::Data(data)).is_ok() {
                        let _ = out_tx.send(Packet {
                            cmd: A_OKAY,
                            arg0: arg1,
                            arg1: arg0,
                            data: Vec::new(),
                        });
                    } else {
                        streams.remove(&arg1);
                    }
                }
            }
            A_OKAY => {
                if let Some(tx) = streams.get(&arg1) {
                    if tx.send(In::Okay).is_err() {
                        streams.remove(&arg1);
                    }
                }
            }
            A_CLSE => {
                if let Some(tx) = streams.remove(&arg1) {
                    let _ = tx.send(In::Close);
                }
            }
            // AUTH/STLS/SYNC from a host: we never asked for them; ignore.
            _ => {}
        }
    };
    if matches!(result, Err(ConnError::Malformed)) {
        shared.lock().counters.malformed_packets += 1;
    }
    for (_, tx) in streams.drain() {
        let _ = tx.send(In::Close);
    }
    drop(out_tx);
    writer.abort();
    result
}
