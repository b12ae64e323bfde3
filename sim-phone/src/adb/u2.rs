//! uiautomator2's server on the transport: the stream its `app_process` runs on (open
//! while the process lives; closing it ends the process, as uiautomator2's `core.py`
//! stops the server) and the `tcp:PORT` streams that reach its HTTP server, with the fault
//! knobs (`SimPhoneHandle::u2_*`) applied per call.

use std::sync::Arc;

use chrono::Utc;
use tokio::sync::watch;

use crate::device::{Exec, LatencyProfile};
use crate::u2::http::{self, Parsed, Request};
use crate::u2::rpc;
use crate::u2::state::CallFault;

use super::shared::{matching_hold, Shared};
use super::stream::{v2_packet, StreamIo};

fn alive(shared: &Shared, id: u64) -> bool {
    shared.lock().u2.is_current(id)
}

/// The process ended here (its stream closed): the server goes with it.
fn end(shared: &Shared, id: u64) {
    if shared.lock().u2.stop(id) {
        shared.u2_notify();
    }
}

/// Keep the server process `id` on this stream (`v2`: `Some(true)` for shell v2, `Some
/// (false)` for a v1 shell, `None` for `exec:`): print its first line, finish starting
/// (listening from then on), then hold until the stream closes (the process ends) or the
/// process ends by itself (`/stop`, a kill: shell v2 gets the exit status).
pub(crate) async fn resident(
    io: &mut StreamIo,
    shared: &Arc<Shared>,
    id: u64,
    v2: Option<bool>,
    out: Exec,
) {
    let v2 = v2 == Some(true);
    let frame = |id: u8, data: &[u8]| {
        if v2 {
            v2_packet(id, data)
        } else {
            data.to_vec()
        }
    };
    let mut rx = shared.u2_changed.subscribe();
    if !io.write(&frame(1, &out.stdout)).await {
        end(shared, id);
        return;
    }
    if shared.profile == LatencyProfile::Realistic && !out.delay.is_zero() {
        let started = tokio::time::sleep(out.delay);
        tokio::pin!(started);
        loop {
            tokio::select! {
                _ = &mut started => break,
                d = io.read() => if d.is_none() {
                    // Closed while starting: the process goes before it listened.
                    end(shared, id);
                    return;
                },
            }
        }
    }
    let port = {
        let mut d = shared.lock();
        d.u2.mark_listening(id);
        d.u2.running.filter(|r| r.id == id).map(|r| r.port)
    };
    shared.u2_notify();
    if let Some(port) = port {
        let line = format!("[server] INFO: http server listening on *:{port}\n");
        if !io.write(&frame(1, line.as_bytes())).await {
            end(shared, id);
            return;
        }
    }
    loop {
        if !alive(shared, id) {
            break;
        }
        tokio::select! {
            d = io.read() => {
                if d.is_none() {
                    end(shared, id);
                    return;
                }
                // Input to the process is ignored.
            }
            r = rx.changed() => {
                if r.is_err() {
                    return;
                }
            }
        }
    }
    let code = shared.lock().u2.exit_status(id).unwrap_or(137);
    if v2 {
        let code = u8::try_from(code.clamp(0, 255)).unwrap_or(255);
        io.write_packet(v2_packet(3, &[code])).await;
    }
}

/// A `tcp:PORT` stream to the server: HTTP/1.1 requests in, answers out, until either
/// side closes or the server process ends (the stream is then cut).
pub(crate) async fn tcp(io: &mut StreamIo, shared: &Arc<Shared>, port: u16) {
    let Some(id) = shared.lock().u2.listening_on(port) else {
        return;
    };
    let mut rx = shared.u2_changed.subscribe();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        loop {
            match http::parse(&buf) {
                Parsed::Incomplete => break,
                Parsed::Bad(msg) => {
                    let date = http_date(shared);
                    let r = http::response(
                        400,
                        "Bad Request",
                        "text/plain",
                        &date,
                        msg.as_bytes(),
                        false,
                    );
                    io.write(&r).await;
                    return;
                }
                Parsed::Done(req, n) => {
                    buf.drain(..n);
                    if !serve(io, shared, id, &req, &mut rx).await {
                        return;
                    }
                }
            }
        }
        tokio::select! {
            d = io.read() => match d {
                Some(d) => buf.extend_from_slice(&d),
                None => return,
            },
            r = rx.changed() => {
                if r.is_err() || !alive(shared, id) {
                    return;
                }
            }
        }
    }
}

/// The server process dies (a scripted fault): its streams see it and end.
fn kill(shared: &Shared) {
    if shared.lock().u2.kill() {
        shared.u2_notify();
    }
}

fn http_date(shared: &Shared) -> String {
    let now = shared.lock().now();
    now.with_timezone(&Utc)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// Answer one request; false when the stream must close after it.
async fn serve(
    io: &mut StreamIo,
    shared: &Arc<Shared>,
    id: u64,
    req: &Request,
    rx: &mut watch::Receiver<u64>,
) -> bool {
    if !alive(shared, id) {
        return false;
    }
    let date = http_date(shared);
    let keep = req.keep_alive;
    let reply = |status: u16, reason: &str, ctype: &str, body: &[u8]| {
        http::response(status, reason, ctype, &date, body, keep)
    };
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/ping") => io.write(&reply(200, "OK", "text/plain", b"pong")).await && keep,
        ("POST", "/jsonrpc/0") => {
            let method = serde_json::from_slice::<serde_json::Value>(&req.body)
                .ok()
                .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string))
                .unwrap_or_default();
            // A scripted hold (`hold_u2_calls`): wait before anything of the call runs;
            // a server that dies meanwhile cuts the stream.
            if let Some(mut released) = matching_hold(&shared.u2_holds, |m| m == method) {
                loop {
                    tokio::select! {
                        // A dropped gate counts as released.
                        _ = released.wait_for(|r| *r) => break,
                        r = rx.changed() => {
                            if r.is_err() || !alive(shared, id) {
                                return false;
                            }
                        }
                    }
                }
                if !alive(shared, id) {
                    return false;
                }
            }
            let fault = shared.lock().u2.on_call(&method);
            match fault {
                Some(CallFault::Kill) => {
                    shared.lock().counters.u2_requests += 1;
                    kill(shared);
                    false
                }
                Some(CallFault::Hang) => {
                    shared.lock().counters.u2_requests += 1;
                    // Read, never answered: until the caller gives up or the server dies.
                    loop {
                        tokio::select! {
                            d = io.read() => if d.is_none() { return false; },
                            r = rx.changed() => {
                                if r.is_err() || !alive(shared, id) {
                                    return false;
                                }
                            }
                        }
                    }
                }
                Some(CallFault::RpcError) => {
                    shared.lock().counters.u2_requests += 1;
                    let body = rpc::not_connected_answer(&req.body);
                    io.write(&reply(200, "OK", "application/json", &body)).await && keep
                }
                f => {
                    let (body, ms) = {
                        let mut d = shared.lock();
                        let r = d.u2_jsonrpc(&req.body);
                        d.after_order_faults();
                        r
                    };
                    shared.sync_offline();
                    if shared.profile == LatencyProfile::Realistic && ms > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    }
                    if f == Some(CallFault::KillAfter) {
                        kill(shared);
                    }
                    if !alive(shared, id) {
                        // Killed while the call ran: its effect stays, no answer comes.
                        return false;
                    }
                    let r = reply(200, "OK", "application/json", &body);
                    if f == Some(CallFault::Truncate) {
                        io.write(&r[..r.len() / 2]).await;
                        return false;
                    }
                    io.write(&r).await && keep
                }
            }
        }
        (_, "/stop") => {
            let r = reply(200, "OK", "text/plain", b"Server stopped!!!");
            let _ = io.write(&r).await;
            end(shared, id);
            false
        }
        _ => {
            io.write(&reply(404, "Not Found", "text/plain", b"Not Found"))
                .await
                && keep
        }
    }
}
