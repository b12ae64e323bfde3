//! Streams to the phone through the adb server's smart socket, on a plain `TcpStream`
//! whose reads and writes are bounded by the call's deadline: `host:transport:SERIAL`,
//! then a device service (`tcp:PORT`, `shell:…`, `sync:`). Also the one HTTP exchange
//! (`exchange`) and the sync `SEND` of a file (`push`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use super::error::{Reach, U2Error};
use super::http::{self, Answer, Parsed};

/// Where the phone is: the adb server and the serial it knows the phone by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub server: SocketAddrV4,
    pub serial: String,
}

/// A failed step, before or after the request left. `sent`: the request (or part of it)
/// may have reached the server, so the call may have run.
#[derive(Debug)]
pub struct Failure {
    pub error: U2Error,
    pub sent: bool,
    /// The deadline passed (the caller maps it to `DeviceError::DeadlineExceeded`).
    pub timed_out: bool,
}

impl Failure {
    fn before(error: U2Error) -> Failure {
        Failure {
            error,
            sent: false,
            timed_out: false,
        }
    }
}

fn remaining(end: Instant) -> Option<Duration> {
    end.checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn io_failure(e: std::io::Error, what: &str, sent: bool) -> Failure {
    let timed_out = matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut);
    Failure {
        error: if timed_out {
            U2Error::ServerGone(format!("{what}: no answer before the deadline"))
        } else {
            U2Error::ServerGone(format!("{what}: {e}"))
        },
        sent,
        timed_out,
    }
}

fn timeout_failure(sent: bool) -> Failure {
    Failure {
        error: U2Error::ServerGone("no answer before the deadline".into()),
        sent,
        timed_out: true,
    }
}

/// Opens `service` on the phone: a stream whose reads and writes time out at `end`.
/// A refused service (nothing listens on the port, the shell refused) is
/// [`U2Error::ServerGone`] with `sent == false`.
pub fn open(ep: &Endpoint, service: &str, end: Instant) -> Result<TcpStream, Failure> {
    let wait = remaining(end).ok_or_else(|| timeout_failure(false))?;
    let mut s = TcpStream::connect_timeout(&ep.server.into(), wait).map_err(|e| {
        Failure::before(U2Error::Unreachable {
            reach: Reach::AdbServer,
            detail: format!("adb server at {}: {e}", ep.server),
        })
    })?;
    let _ = s.set_nodelay(true);
    request(&mut s, &format!("host:transport:{}", ep.serial), end)?;
    request(&mut s, service, end)?;
    Ok(s)
}

/// One smart-socket request: `OKAY` or `FAIL` + message.
fn request(s: &mut TcpStream, what: &str, end: Instant) -> Result<(), Failure> {
    bound(s, end).map_err(|_| timeout_failure(false))?;
    let msg = format!("{:04x}{what}", what.len());
    s.write_all(msg.as_bytes())
        .map_err(|e| io_failure(e, "adb server", false))?;
    let mut status = [0u8; 4];
    bound(s, end).map_err(|_| timeout_failure(false))?;
    s.read_exact(&mut status)
        .map_err(|e| io_failure(e, "adb server", false))?;
    match &status {
        b"OKAY" => Ok(()),
        b"FAIL" => {
            let mut len = [0u8; 4];
            let _ = s.read_exact(&mut len);
            let n = std::str::from_utf8(&len)
                .ok()
                .and_then(|t| usize::from_str_radix(t, 16).ok())
                .unwrap_or(0)
                .min(1024);
            let mut text = vec![0u8; n];
            let _ = s.read_exact(&mut text);
            let text = String::from_utf8_lossy(&text).into_owned();
            let service = what.split(':').next().unwrap_or("");
            Err(Failure::before(if service == "host" {
                // `host:transport:SERIAL` refused: the adb server cannot reach the
                // phone (offline, not found, unauthorized), the server is not at fault.
                U2Error::Unreachable {
                    reach: reach_of(&text),
                    detail: format!("adb server: {}", http::snippet(&text)),
                }
            } else {
                U2Error::ServerGone(format!(
                    "the phone refused `{}`: {}",
                    http::snippet(what),
                    http::snippet(&text)
                ))
            }))
        }
        other => Err(Failure::before(U2Error::BadAnswer(format!(
            "adb server answered {:?}",
            String::from_utf8_lossy(other)
        )))),
    }
}

/// What an adb server's `FAIL` text to `host:transport:SERIAL` says about the phone.
pub fn reach_of(text: &str) -> Reach {
    let t = text.to_ascii_lowercase();
    if t.contains("unauthorized") {
        Reach::Unauthorized
    } else if t.contains("not found") || t.contains("no devices") {
        Reach::NotFound
    } else {
        Reach::Offline
    }
}

/// Sets the stream's read/write timeouts to what is left until `end`.
pub fn bound(s: &TcpStream, end: Instant) -> std::io::Result<()> {
    let left = remaining(end).ok_or_else(|| std::io::Error::from(ErrorKind::TimedOut))?;
    s.set_read_timeout(Some(left))?;
    s.set_write_timeout(Some(left))
}

/// One HTTP request to the server on `port` and its whole answer, by `end`.
pub fn exchange(ep: &Endpoint, port: u16, req: &[u8], end: Instant) -> Result<Answer, Failure> {
    let mut s = open(ep, &format!("tcp:{port}"), end)?;
    bound(&s, end).map_err(|_| timeout_failure(false))?;
    s.write_all(req)
        .map_err(|e| io_failure(e, "writing the request", true))?;
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if bound(&s, end).is_err() {
            return Err(timeout_failure(true));
        }
        let (n, eof) = match s.read(&mut chunk) {
            Ok(0) => (0, true),
            Ok(n) => (n, false),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(timeout_failure(true))
            }
            // A reset after the request left: like a close, what arrived is judged.
            Err(_) => (0, true),
        };
        buf.extend_from_slice(&chunk[..n]);
        match http::parse(&buf, eof) {
            Ok(Parsed::Done(a)) => return Ok(a),
            Ok(Parsed::Incomplete) => {}
            Err(error) => {
                return Err(Failure {
                    error,
                    sent: true,
                    timed_out: false,
                })
            }
        }
    }
}

/// Pushes `data` to `path` (mode 0644) over the sync service, by `end`.
pub fn push(ep: &Endpoint, path: &str, data: &[u8], end: Instant) -> Result<(), Failure> {
    let mut s = open(ep, "sync:", end)?;
    let io = |e: std::io::Error| io_failure(e, "push", true);
    let spec = format!("{path},{}", 0o100_644);
    let mut head = b"SEND".to_vec();
    head.extend_from_slice(&u32::try_from(spec.len()).unwrap_or(0).to_le_bytes());
    head.extend_from_slice(spec.as_bytes());
    bound(&s, end).map_err(|_| timeout_failure(true))?;
    s.write_all(&head).map_err(io)?;
    for part in data.chunks(64 * 1024) {
        bound(&s, end).map_err(|_| timeout_failure(true))?;
        let mut m = b"DATA".to_vec();
        m.extend_from_slice(&u32::try_from(part.len()).unwrap_or(0).to_le_bytes());
        m.extend_from_slice(part);
        s.write_all(&m).map_err(io)?;
    }
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut done = b"DONE".to_vec();
    done.extend_from_slice(&u32::try_from(mtime).unwrap_or(0).to_le_bytes());
    bound(&s, end).map_err(|_| timeout_failure(true))?;
    s.write_all(&done).map_err(io)?;
    let mut status = [0u8; 8];
    s.read_exact(&mut status).map_err(io)?;
    if &status[..4] == b"OKAY" {
        let _ = s.write_all(b"QUIT\0\0\0\0");
        return Ok(());
    }
    let n = u32::from_le_bytes([status[4], status[5], status[6], status[7]]).min(1024) as usize;
    let mut text = vec![0u8; n];
    let _ = s.read_exact(&mut text);
    Err(Failure::before(U2Error::StartFailed(format!(
        "pushing {path}: {}",
        http::snippet(&String::from_utf8_lossy(&text))
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adb_servers_refusals_of_host_transport_say_where_the_phone_is() {
        // The texts adb servers answer to `host:transport:SERIAL`.
        assert_eq!(reach_of("device offline"), Reach::Offline);
        assert_eq!(reach_of("device still connecting"), Reach::Offline);
        assert_eq!(
            reach_of("device '127.0.0.1:5555' not found"),
            Reach::NotFound
        );
        assert_eq!(reach_of("no devices/emulators found"), Reach::NotFound);
        assert_eq!(
            reach_of("device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set"),
            Reach::Unauthorized
        );
    }
}
