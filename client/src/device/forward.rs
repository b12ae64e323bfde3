//! A loopback port forward with a kill switch, between `adb_client` and the real peer.
//!
//! Why it exists: `adb_client` 3.2 reads with no timeout, so a call whose deadline
//! passed would leave its thread blocked forever; and its direct-TCP reader
//! (`TcpTransport::read_message_with_timeout`) adds up `read()` results until a message
//! is complete, so at end of stream — where `read()` returns 0 forever — it spins at
//! 100 % CPU (the session's `Drop` reads once more after any error, so even a reset
//! socket ends in that spin). We cannot change the crate, but we own the socket it
//! talks to. Every connection the crate opens goes to this relay, which opens its own
//! connection to the real peer and copies bytes, and ends things in a way the crate
//! survives:
//!
//! - [`Mode::Device`] (direct TCP, the ADB device protocol): messages are forwarded
//!   whole (24-byte header + payload). When the phone's side ends, or the kill switch
//!   is thrown, the relay stops forwarding and hands the crate one `CLSE` message
//!   instead of an end of stream: its pending read returns, the shell loop ends
//!   without the exit-status marker (so our call fails with a protocol error), and the
//!   socket stays open and idle so the crate's cleanup reads time out instead of
//!   spinning. The socket closes when the crate closes it.
//! - [`Mode::Server`] (the adb server's smart-socket protocol): an end of stream from
//!   the server is passed on (the crate handles it: it is how every command ends); the
//!   kill switch resets the crate's side (SO_LINGER 0, then close) so a blocked read
//!   fails with `ConnectionReset`.
//!
//! Each accepted connection gets a fresh upstream connection, so the relay adds no
//! access: a local process connecting to it still has to pass the phone's AUTH, or is
//! talking to an adb server that any local process can reach anyway.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which protocol runs through the relay (it decides how endings are handed on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Device,
    Server,
}

/// ADB device-protocol message header size; the payload length is at offset 12.
const HEADER: usize = 24;
/// Larger payloads than any adbd negotiates (1 MiB) mean the stream is garbage.
const MAX_PAYLOAD: usize = 16 * 1024 * 1024;
const A_CLSE: u32 = 0x4553_4c43;
const A_STLS: u32 = 0x534c_5453;

/// The relay's listening side; dropping it closes the relay and every connection.
pub(crate) struct Forward {
    local: SocketAddrV4,
    kill: Arc<ForwardKill>,
}

/// Shared between the relay's threads and whoever may need to cut it (the caller whose
/// deadline passed).
pub(crate) struct ForwardKill {
    closed: AtomicBool,
    pairs: Mutex<Vec<Arc<Pair>>>,
    local: SocketAddrV4,
}

struct Pair {
    mode: Mode,
    client: TcpStream,
    upstream: TcpStream,
    killed: AtomicBool,
}

impl Pair {
    /// Cut the upstream side; the pump reading it then ends the client side as the mode
    /// requires. Idempotent.
    fn kill(&self) {
        if self.killed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.upstream.shutdown(Shutdown::Both);
    }

    /// Server mode: reset the client side (its blocked read fails) and stop its pump.
    fn reset_client(&self) {
        // Linger 0: the final close sends RST, not FIN. Shutting the read side wakes the
        // pump blocked reading the client; the last Arc to go closes the socket.
        let _ = socket2::SockRef::from(&self.client).set_linger(Some(Duration::ZERO));
        let _ = self.client.shutdown(Shutdown::Read);
    }
}

impl ForwardKill {
    /// Cut every connection and stop accepting new ones.
    pub(crate) fn reset_all(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Wake the blocked accept() so its thread sees `closed` and ends.
            let _ = TcpStream::connect_timeout(&SocketAddr::V4(self.local), Duration::from_secs(1));
        }
        let pairs = std::mem::take(&mut *self.pairs.lock().unwrap_or_else(|p| p.into_inner()));
        for p in pairs {
            p.kill();
        }
    }
}

impl Forward {
    /// Listen on a fresh loopback port; each connection is forwarded to `target`
    /// (connected within `connect_timeout`).
    pub(crate) fn start(
        target: SocketAddr,
        mode: Mode,
        connect_timeout: Duration,
    ) -> std::io::Result<Forward> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let local = match listener.local_addr()? {
            SocketAddr::V4(v4) => v4,
            SocketAddr::V6(_) => {
                return Err(std::io::Error::other("loopback bind gave an IPv6 address"))
            }
        };
        let kill = Arc::new(ForwardKill {
            closed: AtomicBool::new(false),
            pairs: Mutex::new(Vec::new()),
            local,
        });
        let k = kill.clone();
        std::thread::Builder::new()
            .name("adb-relay".into())
            .spawn(move || accept_loop(listener, target, mode, connect_timeout, k))?;
        Ok(Forward { local, kill })
    }

    pub(crate) fn local(&self) -> SocketAddrV4 {
        self.local
    }

    pub(crate) fn kill_switch(&self) -> Arc<ForwardKill> {
        self.kill.clone()
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.kill.reset_all();
    }
}

fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    mode: Mode,
    timeout: Duration,
    kill: Arc<ForwardKill>,
) {
    for conn in listener.incoming() {
        if kill.closed.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = conn else { continue };
        let _ = client.set_nodelay(true);
        let upstream = match TcpStream::connect_timeout(&target, timeout) {
            Ok(u) => u,
            Err(_) => {
                refuse(mode, &client);
                continue;
            }
        };
        let _ = upstream.set_nodelay(true);
        let pair = Arc::new(Pair {
            mode,
            client,
            upstream,
            killed: AtomicBool::new(false),
        });
        {
            let mut pairs = kill.pairs.lock().unwrap_or_else(|p| p.into_inner());
            if kill.closed.load(Ordering::Acquire) {
                // Cut before its pumps ever ran: end the client as the mode requires.
                pair.kill();
                refuse(mode, &pair.client);
                return;
            }
            pairs.push(pair.clone());
        }
        for to_client in [true, false] {
            let (p, k) = (pair.clone(), kill.clone());
            let spawned = std::thread::Builder::new()
                .name("adb-relay-pump".into())
                .spawn(move || {
                    if to_client {
                        pump_to_client(&p);
                    } else {
                        pump_to_upstream(&p);
                        forget(&p, &k);
                    }
                });
            if spawned.is_err() {
                pair.kill();
                forget(&pair, &kill);
            }
        }
    }
}

/// The peer could not be reached: tell the client in a way it survives (see the module
/// doc): a `CLSE` for the device protocol, a reset for the server.
fn refuse(mode: Mode, client: &TcpStream) {
    match mode {
        Mode::Device => {
            let mut c = client;
            let _ = c.write_all(&clse());
            // The client closes when it has read it; keep nothing here.
            drop_later(client);
        }
        Mode::Server => {
            let _ = socket2::SockRef::from(client).set_linger(Some(Duration::ZERO));
        }
    }
}

/// Keep a refused device-protocol client open until it closes, so its cleanup reads
/// time out instead of seeing an end of stream.
fn drop_later(client: &TcpStream) {
    if let Ok(c) = client.try_clone() {
        let _ = std::thread::Builder::new()
            .name("adb-relay-refused".into())
            .spawn(move || {
                let mut c = c;
                let mut buf = [0u8; 4096];
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            });
    }
}

/// Acknowledge at once what was just read. `adb_client` does not set TCP_NODELAY on its
/// direct connections and writes a header and its payload separately: with Nagle on its
/// side and a delayed ACK on ours every message would wait ≈40 ms for the second write.
/// Linux forgets quick-ack mode after a while, so it is renewed after every read.
fn ack_now(s: &TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let _ = socket2::SockRef::from(s).set_tcp_quickack(true);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = s;
}

fn clse() -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..4].copy_from_slice(&A_CLSE.to_le_bytes());
    h[20..24].copy_from_slice(&(A_CLSE ^ 0xffff_ffff).to_le_bytes());
    h
}

/// Drop the relay's own reference, so the last pump to end closes the sockets.
fn forget(pair: &Arc<Pair>, kill: &ForwardKill) {
    kill.pairs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|p| !Arc::ptr_eq(p, pair));
}

/// Peer → client, the only writer to the client.
fn pump_to_client(pair: &Pair) {
    let (mut from, mut to) = (&pair.upstream, &pair.client);
    match pair.mode {
        Mode::Server => {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(n) if n > 0 && !pair.killed.load(Ordering::Acquire) => {
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            if pair.killed.load(Ordering::Acquire) {
                pair.reset_client();
            } else {
                // The server ended the command: pass the end of stream on.
                let _ = pair.client.shutdown(Shutdown::Write);
            }
        }
        Mode::Device => {
            // Whole messages only, so the CLSE below always lands on a boundary.
            let mut header = [0u8; HEADER];
            let mut tls = false;
            loop {
                if from.read_exact(&mut header).is_err() || pair.killed.load(Ordering::Acquire) {
                    break;
                }
                let len =
                    u32::from_le_bytes([header[12], header[13], header[14], header[15]]) as usize;
                if len > MAX_PAYLOAD {
                    break;
                }
                let mut msg = Vec::with_capacity(HEADER + len);
                msg.extend_from_slice(&header);
                msg.resize(HEADER + len, 0);
                if from.read_exact(&mut msg[HEADER..]).is_err()
                    || pair.killed.load(Ordering::Acquire)
                    || to.write_all(&msg).is_err()
                {
                    break;
                }
                // Sending an answer puts the socket back in delayed-ACK ("ping-pong")
                // mode; the client's next two-part write would wait for it.
                ack_now(&pair.client);
                if header[0..4] == A_STLS.to_le_bytes() {
                    // The phone switches the connection to TLS (Android 11+ wireless
                    // debugging): from here on there are no ADB frames to respect.
                    tls = true;
                    break;
                }
            }
            if tls {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0
                        || pair.killed.load(Ordering::Acquire)
                        || to.write_all(&buf[..n]).is_err()
                    {
                        break;
                    }
                }
                // No message can be injected into a TLS stream: reset instead.
                pair.reset_client();
            } else {
                let _ = to.write_all(&clse());
            }
            let _ = pair.upstream.shutdown(Shutdown::Both);
        }
    }
}

/// Client → peer. Ends when the client closes (or, in server mode, is reset); then
/// both sides are closed.
fn pump_to_upstream(pair: &Pair) {
    let (mut from, mut to) = (&pair.client, &pair.upstream);
    let mut buf = vec![0u8; 64 * 1024];
    let mut forwarding = true;
    loop {
        match from.read(&mut buf) {
            Ok(n) if n > 0 => {
                ack_now(&pair.client);
                // After the peer is gone keep draining, so the client can still write
                // (its cleanup does) until it closes.
                if forwarding && to.write_all(&buf[..n]).is_err() {
                    forwarding = false;
                }
            }
            _ => break,
        }
    }
    pair.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(cmd: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        for w in [cmd, 1, 2, payload.len() as u32, 0, cmd ^ 0xffff_ffff] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        m.extend_from_slice(payload);
        m
    }

    /// A fake phone that sends one message in two pieces, then closes.
    fn phone_that_leaves() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let m = message(0x4554_5257, b"hello");
                let _ = s.write_all(&m[..10]);
                let _ = s.flush();
                let _ = s.write_all(&m[10..]);
                // Dropped: the phone is gone.
            }
        });
        addr
    }

    #[test]
    fn device_mode_turns_the_end_of_the_phone_into_one_clse_and_no_eof() {
        let relay = Forward::start(phone_that_leaves(), Mode::Device, Duration::from_secs(5))
            .expect("relay");
        let mut c = TcpStream::connect(relay.local()).expect("connect");
        let mut got = vec![0u8; HEADER + 5 + HEADER];
        c.read_exact(&mut got).expect("message and CLSE");
        assert_eq!(
            &got[..HEADER + 5],
            message(0x4554_5257, b"hello").as_slice()
        );
        assert_eq!(&got[HEADER + 5..], clse().as_slice());
        // No end of stream after it (adb_client would spin on one): a read times out.
        c.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let e = c.read(&mut [0u8; 1]).expect_err("no data, no EOF");
        assert!(matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ));
    }

    #[test]
    fn the_kill_switch_unblocks_a_reader_in_both_modes() {
        for mode in [Mode::Device, Mode::Server] {
            // A peer that accepts and then says nothing.
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = l.local_addr().expect("addr");
            let silent = std::thread::spawn(move || l.accept().map(|(s, _)| s));
            let relay = Forward::start(addr, mode, Duration::from_secs(5)).expect("relay");
            let mut c = TcpStream::connect(relay.local()).expect("connect");
            let _peer = silent.join().expect("join").expect("accepted");
            let kill = relay.kill_switch();
            let reader = std::thread::spawn(move || {
                let mut buf = [0u8; HEADER];
                c.read_exact(&mut buf).map(|_| buf)
            });
            kill.reset_all();
            let r = reader.join().expect("join");
            match mode {
                Mode::Device => assert_eq!(r.expect("CLSE"), clse()),
                Mode::Server => assert!(r.is_err(), "reset: {r:?}"),
            }
        }
    }
}
