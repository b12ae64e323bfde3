//! The device side of the ADB transport protocol over TCP.
//!
//! Wire facts (AOSP `packages/modules/adb` protocol.md, services.md, shell_protocol.h,
//! file_sync_protocol.h): a 24-byte little-endian header (command, arg0, arg1, length,
//! checksum, magic = command ^ 0xffffffff) and a payload. We answer CNXN directly (no
//! AUTH), negotiate version and max payload, acknowledge every WRTE with OKAY and keep at
//! most one WRTE in flight per stream. Checksums are sent and verified only when the
//! negotiated version is 0x01000000 (adb_client speaks that one; the real adb server
//! speaks 0x01000001 which skips them).
//!
//! **Invariant:** nothing a peer sends can panic the phone or stall another connection:
//! a malformed packet ends its own connection, every other connection keeps being served.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::device::{Device, LatencyProfile};

pub use crate::identity::{DEVICE, MODEL, PRODUCT};

const A_SYNC: u32 = 0x434e_5953;
const A_CNXN: u32 = 0x4e58_4e43;
const A_OPEN: u32 = 0x4e45_504f;
const A_OKAY: u32 = 0x5941_4b4f;
const A_CLSE: u32 = 0x4553_4c43;
const A_WRTE: u32 = 0x4554_5257;
const A_AUTH: u32 = 0x4854_5541;
const A_STLS: u32 = 0x534c_5453;

const VERSION_MIN: u32 = 0x0100_0000;
const VERSION_SKIP_CHECKSUM: u32 = 0x0100_0001;
/// Largest payload we accept or send (the protocol's 1 MiB maximum).
const MAX_PAYLOAD: u32 = 1024 * 1024;
/// Payload limit before CNXN has negotiated one.
const MAX_PAYLOAD_V1: u32 = 4096;
/// Sync DATA chunks are at most 64 KiB (SYNC_DATA_MAX).
const SYNC_DATA_MAX: usize = 64 * 1024;
/// A pushed file may not exceed this (the phone keeps files in memory).
const MAX_PUSH: usize = 64 * 1024 * 1024;

/// State shared by every connection: the phone itself plus the switches the handle flips.
pub(crate) struct Shared {
    pub device: Mutex<Device>,
    pub profile: LatencyProfile,
    pub offline: watch::Sender<bool>,
    pub banner: String,
    /// Scripted hangs (see [`crate::SimPhoneHandle::hang_commands`]): a command line
    /// containing a rule's pattern waits, before it runs, until the rule is released.
    pub hangs: Mutex<Vec<HangRule>>,
}

/// One scripted hang: lines containing `pattern` wait until `released` turns true.
pub(crate) struct HangRule {
    pub pattern: String,
    pub released: watch::Receiver<bool>,
    pub hits: Arc<std::sync::atomic::AtomicU64>,
}

impl Shared {
    /// Lock the phone. A panic while holding the lock would poison it; the phone state is
    /// still consistent enough for a simulator, so keep going rather than cascade panics.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Device> {
        self.device.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publish the device's offline flag (a fault plan may have flipped it).
    pub(crate) fn sync_offline(&self) {
        let off = self.lock().offline;
        self.offline.send_if_modified(|v| {
            let changed = *v != off;
            *v = off;
            changed
        });
    }
}

pub(crate) fn banner() -> String {
    format!(
        "device::ro.product.name={PRODUCT};ro.product.model={MODEL};ro.product.device={DEVICE};features=shell_v2,cmd"
    )
}

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

/// A packet to send.
struct Packet {
    cmd: u32,
    arg0: u32,
    arg1: u32,
    data: Vec<u8>,
}

/// What a stream's service task receives.
enum In {
    Data(Vec<u8>),
    Okay,
    Close,
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

fn checksum(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |a, &b| a.wrapping_add(u32::from(b)))
}

fn encode(p: &Packet, version: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + p.data.len());
    let check = if version >= VERSION_SKIP_CHECKSUM {
        0
    } else {
        checksum(&p.data)
    };
    for v in [
        p.cmd,
        p.arg0,
        p.arg1,
        p.data.len() as u32,
        check,
        p.cmd ^ 0xffff_ffff,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&p.data);
    out
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
                let Some(kind) = Service::parse(&service) else {
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

/// One open stream as its service sees it.
struct StreamIo {
    our: u32,
    their: u32,
    out: mpsc::UnboundedSender<Packet>,
    rx: mpsc::UnboundedReceiver<In>,
    max_payload: usize,
    /// A WRTE of ours is waiting for the peer's OKAY.
    awaiting_ok: bool,
    /// Data that arrived while we waited for an OKAY.
    stash: VecDeque<Vec<u8>>,
}

impl StreamIo {
    /// Wait until the previous WRTE was acknowledged. False when the stream closed.
    async fn wait_ok(&mut self) -> bool {
        while self.awaiting_ok {
            match self.rx.recv().await {
                Some(In::Okay) => self.awaiting_ok = false,
                Some(In::Data(d)) => self.stash.push_back(d),
                Some(In::Close) | None => return false,
            }
        }
        true
    }

    /// Send bytes as WRTEs of at most the negotiated size, one in flight at a time.
    async fn write(&mut self, data: &[u8]) -> bool {
        for chunk in data.chunks(self.max_payload.max(1)) {
            if !self.write_packet(chunk.to_vec()).await {
                return false;
            }
        }
        true
    }

    /// Send exactly one WRTE (callers that need packet boundaries, like sync).
    async fn write_packet(&mut self, data: Vec<u8>) -> bool {
        if !self.wait_ok().await {
            return false;
        }
        self.awaiting_ok = true;
        self.out
            .send(Packet {
                cmd: A_WRTE,
                arg0: self.our,
                arg1: self.their,
                data,
            })
            .is_ok()
    }

    /// Next data from the peer; `None` when it closed the stream.
    async fn read(&mut self) -> Option<Vec<u8>> {
        if let Some(d) = self.stash.pop_front() {
            return Some(d);
        }
        loop {
            match self.rx.recv().await {
                Some(In::Data(d)) => return Some(d),
                Some(In::Okay) => self.awaiting_ok = false,
                Some(In::Close) | None => return None,
            }
        }
    }

    fn close(self) {
        let _ = self.out.send(Packet {
            cmd: A_CLSE,
            arg0: self.our,
            arg1: self.their,
            data: Vec::new(),
        });
    }
}

/// The services we offer.
#[derive(Debug, PartialEq, Eq)]
enum Service {
    Shell {
        v2: bool,
        cmd: String,
    },
    Exec(String),
    Sync,
    /// `framebuffer:` — raw RGBA with a version-2 header (what `adb_client`'s
    /// `framebuffer()` and old `adb screencap` paths read).
    Framebuffer,
}

impl Service {
    fn parse(s: &str) -> Option<Service> {
        if let Some(cmd) = s.strip_prefix("exec:") {
            return Some(Service::Exec(cmd.to_string()));
        }
        if s == "sync:" {
            return Some(Service::Sync);
        }
        if s == "framebuffer:" {
            return Some(Service::Framebuffer);
        }
        // shell[,arg...]:command — args like v2, raw, pty, TERM=xterm.
        let rest = s.strip_prefix("shell")?;
        let (args, cmd) = rest.split_once(':')?;
        if !args.is_empty() && !args.starts_with(',') {
            return None;
        }
        let v2 = args.split(',').any(|a| a == "v2");
        Some(Service::Shell {
            v2,
            cmd: cmd.to_string(),
        })
    }
}

async fn run_service(kind: Service, mut io: StreamIo, shared: Arc<Shared>) {
    match kind {
        Service::Shell { v2, cmd } => shell(&mut io, &shared, v2, &cmd).await,
        Service::Exec(cmd) => {
            let out = execute(&shared, &cmd).await;
            let mut bytes = out.stdout;
            bytes.extend_from_slice(&out.stderr);
            io.write(&bytes).await;
        }
        Service::Sync => {
            shared.lock().counters.sync_sessions += 1;
            sync(&mut io, &shared).await;
        }
        Service::Framebuffer => {
            let (w, h, rgba, delay) = shared.lock().framebuffer();
            if shared.profile == LatencyProfile::Realistic {
                tokio::time::sleep(delay).await;
            }
            // fb_info v2: version, bpp, colorSpace, size, width, height, then offset/length
            // of red, blue, green, alpha (AOSP framebuffer_service.cpp).
            let mut v = Vec::with_capacity(56 + rgba.len());
            for x in [
                2u32,
                32,
                0,
                rgba.len() as u32,
                w,
                h,
                0,
                8,
                16,
                8,
                8,
                8,
                24,
                8,
            ] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.extend_from_slice(&rgba);
            io.write(&v).await;
        }
    }
    io.close();
}

/// Run a command line on the phone; sleep its simulated cost in the realistic profile.
async fn execute(shared: &Arc<Shared>, line: &str) -> crate::device::Exec {
    hold_if_hung(shared, line).await;
    let out = shared.lock().run_line(line);
    shared.sync_offline();
    if shared.profile == LatencyProfile::Realistic && !out.delay.is_zero() {
        tokio::time::sleep(out.delay).await;
    }
    out
}

/// Wait (outside the phone's lock, so other connections keep being served) while an
/// unreleased hang rule matches `line`. Nothing of the line has run yet.
async fn hold_if_hung(shared: &Arc<Shared>, line: &str) {
    let rule = {
        let mut hangs = shared.hangs.lock().unwrap_or_else(|p| p.into_inner());
        hangs.retain(|h| !*h.released.borrow());
        hangs
            .iter()
            .find(|h| line.contains(&h.pattern))
            .map(|h| (h.released.clone(), h.hits.clone()))
    };
    if let Some((mut released, hits)) = rule {
        hits.fetch_add(1, Ordering::AcqRel);
        // A dropped gate counts as released (wait_for then returns Err).
        let _ = released.wait_for(|r| *r).await;
    }
}

fn v2_packet(id: u8, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(5 + data.len());
    p.push(id);
    p.extend_from_slice(&(data.len() as u32).to_le_bytes());
    p.extend_from_slice(data);
    p
}

async fn shell(io: &mut StreamIo, shared: &Arc<Shared>, v2: bool, cmd: &str) {
    if cmd.trim().is_empty() {
        interactive(io, shared, v2).await;
        return;
    }
    let out = execute(shared, cmd).await;
    if v2 {
        // stdout (1), stderr (2), exit (3), each packet within one WRTE.
        let room = io.max_payload.saturating_sub(5).max(1);
        for c in out.stdout.chunks(room) {
            if !io.write_packet(v2_packet(1, c)).await {
                return;
            }
        }
        for c in out.stderr.chunks(room) {
            if !io.write_packet(v2_packet(2, c)).await {
                return;
            }
        }
        let code = u8::try_from(out.code.clamp(0, 255)).unwrap_or(255);
        io.write_packet(v2_packet(3, &[code])).await;
    } else {
        let mut bytes = out.stdout;
        bytes.extend_from_slice(&out.stderr);
        io.write(&bytes).await;
    }
}

/// `adb shell` without a command: read lines, run each, print a prompt. Enough for a
/// human poking at the phone; automation should pass commands.
async fn interactive(io: &mut StreamIo, shared: &Arc<Shared>, v2: bool) {
    let prompt = b"simphone:/ $ ";
    let send = |data: &[u8], id: u8| {
        if v2 {
            v2_packet(id, data)
        } else {
            data.to_vec()
        }
    };
    if !io.write(&send(prompt, 1)).await {
        return;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(d) = io.read().await {
        if v2 {
            pending.extend_from_slice(&d);
            while pending.len() >= 5 {
                let n =
                    u32::from_le_bytes([pending[1], pending[2], pending[3], pending[4]]) as usize;
                if pending.len() < 5 + n {
                    break;
                }
                let id = pending[0];
                let body: Vec<u8> = pending[5..5 + n].to_vec();
                pending.drain(..5 + n);
                match id {
                    0 => buf.extend_from_slice(&body),
                    4 => {
                        let _ = io.write(&v2_packet(3, &[0])).await;
                        return;
                    }
                    _ => {}
                }
            }
        } else {
            buf.extend_from_slice(&d);
        }
        while let Some(pos) = buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line).trim().to_string();
            if line == "exit" {
                if v2 {
                    let _ = io.write(&v2_packet(3, &[0])).await;
                }
                return;
            }
            if !line.is_empty() {
                let out = execute(shared, &line).await;
                if !io.write(&send(&out.stdout, 1)).await || !io.write(&send(&out.stderr, 2)).await
                {
                    return;
                }
            }
            if !io.write(&send(prompt, 1)).await {
                return;
            }
        }
    }
}

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

async fn sync(io: &mut StreamIo, shared: &Arc<Shared>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names() {
        assert_eq!(
            Service::parse("shell,v2,TERM=xterm,raw:uiautomator dump /dev/tty"),
            Some(Service::Shell {
                v2: true,
                cmd: "uiautomator dump /dev/tty".into()
            })
        );
        assert_eq!(
            Service::parse("shell:echo a:b"),
            Some(Service::Shell {
                v2: false,
                cmd: "echo a:b".into()
            })
        );
        assert_eq!(
            Service::parse("exec:screencap '-p'"),
            Some(Service::Exec("screencap '-p'".into()))
        );
        assert_eq!(Service::parse("sync:"), Some(Service::Sync));
        assert_eq!(Service::parse("shellx:ls"), None);
        assert_eq!(Service::parse("reboot:"), None);
    }

    #[test]
    fn checksum_only_for_old_version() {
        let p = Packet {
            cmd: A_WRTE,
            arg0: 1,
            arg1: 2,
            data: vec![1, 2, 3],
        };
        let old = encode(&p, VERSION_MIN);
        let new = encode(&p, VERSION_SKIP_CHECKSUM);
        assert_eq!(&old[16..20], &6u32.to_le_bytes());
        assert_eq!(&new[16..20], &0u32.to_le_bytes());
        assert_eq!(&old[20..24], &(A_WRTE ^ 0xffff_ffff).to_le_bytes());
    }
}
