//! One open stream as its service sees it: data in, WRTEs out with at most one in flight
//! (flow control), CLSE at the end.

use std::collections::VecDeque;

use tokio::sync::mpsc;

use super::packet::{Packet, A_CLSE, A_WRTE};

/// What a stream's service task receives.
pub(crate) enum In {
    Data(Vec<u8>),
    Okay,
    Close,
}

/// One open stream as its service sees it.
pub(crate) struct StreamIo {
    pub(crate) our: u32,
    pub(crate) their: u32,
    pub(crate) out: mpsc::UnboundedSender<Packet>,
    pub(crate) rx: mpsc::UnboundedReceiver<In>,
    pub(crate) max_payload: usize,
    /// A WRTE of ours is waiting for the peer's OKAY.
    pub(crate) awaiting_ok: bool,
    /// Data that arrived while we waited for an OKAY.
    pub(crate) stash: VecDeque<Vec<u8>>,
}

impl StreamIo {
    /// Wait until the previous WRTE was acknowledged. False when the stream closed.
    pub(crate) async fn wait_ok(&mut self) -> bool {
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
    pub(crate) async fn write(&mut self, data: &[u8]) -> bool {
        for chunk in data.chunks(self.max_payload.max(1)) {
            if !self.write_packet(chunk.to_vec()).await {
                return false;
            }
        }
        true
    }

    /// Send exactly one WRTE (callers that need packet boundaries, like sync).
    pub(crate) async fn write_packet(&mut self, data: Vec<u8>) -> bool {
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
    pub(crate) async fn read(&mut self) -> Option<Vec<u8>> {
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

    pub(crate) fn close(self) {
        let _ = self.out.send(Packet {
            cmd: A_CLSE,
            arg0: self.our,
            arg1: self.their,
            data: Vec::new(),
        });
    }
}

/// A shell v2 packet: 1-byte id (stdout 1, stderr 2, exit 3), u32 length, data.
pub(crate) fn v2_packet(id: u8, data: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(5 + data.len());
    p.push(id);
    p.extend_from_slice(&(data.len() as u32).to_le_bytes());
    p.extend_from_slice(data);
    p
}
