//! The `shell:` service: one command (v1: stdout and stderr merged, no exit code; v2:
//! stdout/stderr/exit packets) or, without a command, a line-based interactive shell.

use std::sync::Arc;

use super::shared::{execute, Shared};
use super::stream::{v2_packet, StreamIo};

pub(crate) async fn shell(io: &mut StreamIo, shared: &Arc<Shared>, v2: bool, cmd: &str) {
    if cmd.trim().is_empty() {
        interactive(io, shared, v2).await;
        return;
    }
    let out = execute(shared, cmd).await;
    if let Some(id) = out.resident {
        super::u2::resident(io, shared, id, Some(v2), out).await;
        return;
    }
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
