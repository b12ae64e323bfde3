//! The server's lifetime on the phone and the fault knobs the handle sets: plain data the
//! `app_process` builtin, the `uiautomator` builtin and the transport read under the
//! phone's lock.

/// One running server process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// Which start this is (a restarted server is a new process).
    pub id: u64,
    pub port: u16,
    /// The HTTP server accepts connections (after the process's start-up time).
    pub listening: bool,
}

/// Faults the handle scripts for the server's next answers (`SimPhoneHandle::u2_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct U2Faults {
    /// The next JSON-RPC call is read and never answered (the stream stays open).
    pub hang_next: bool,
    /// The next JSON-RPC call is not run and answers a JSON-RPC error object (the one a
    /// server whose UiAutomation was disconnected answers).
    pub rpc_error_next: bool,
    /// The next JSON-RPC call runs, and its HTTP answer is cut after half its bytes (the
    /// stream then closes).
    pub truncate_next: bool,
}

/// What a JSON-RPC call meets (each scripted fault fires once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFault {
    /// Read and never answered; nothing runs (until the caller closes or the server dies).
    Hang,
    /// Not run; answers the "UiAutomation not connected!" error object.
    RpcError,
    /// Runs; half the HTTP answer is sent, then the stream closes.
    Truncate,
    /// The server dies as the call arrives: nothing runs, the stream is cut.
    Kill,
    /// The call runs (a click lands), then the server dies before answering.
    KillAfter,
}

/// A fault scripted for the n-th call (1-based) of one method, or of any method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledFault {
    pub method: Option<String>,
    pub nth: u64,
    pub fault: CallFault,
}

/// The server on this phone: at most one runs (one UiAutomation connection per phone).
#[derive(Debug, Clone, Default)]
pub struct U2State {
    pub running: Option<Running>,
    next_id: u64,
    pub faults: U2Faults,
    /// Consecutive `uiautomator dump`s that failed on an animated page.
    pub(crate) animated_streak: u32,
    /// The last process that ended on its own or was killed, and its exit status (0 after
    /// `/stop`, 137 after a kill).
    pub ended: Option<(u64, i32)>,
    /// Faults scripted for the n-th call (`SimPhoneHandle::u2_fault_on_call`).
    pub scheduled: Vec<ScheduledFault>,
    /// JSON-RPC calls received so far (all processes), in all and per method.
    pub calls: u64,
    pub calls_by_method: std::collections::BTreeMap<String, u64>,
}

impl U2State {
    /// A new server process registers its UiAutomation. `None` when one is registered
    /// already (the new process fails with "already registered").
    pub fn start(&mut self, port: u16) -> Option<u64> {
        if self.running.is_some() {
            return None;
        }
        self.next_id += 1;
        self.running = Some(Running {
            id: self.next_id,
            port,
            listening: false,
        });
        Some(self.next_id)
    }

    /// The process `id` finished starting: its HTTP server accepts connections.
    pub fn mark_listening(&mut self, id: u64) {
        if let Some(r) = self.running.as_mut().filter(|r| r.id == id) {
            r.listening = true;
        }
    }

    /// The server listening on `port`, if any.
    pub fn listening_on(&self, port: u16) -> Option<u64> {
        self.running
            .filter(|r| r.listening && r.port == port)
            .map(|r| r.id)
    }

    /// Is process `id` still the running server?
    pub fn is_current(&self, id: u64) -> bool {
        self.running.is_some_and(|r| r.id == id)
    }

    /// Process `id` ended (its stream closed, `/stop`, a kill). False when it had already.
    pub fn stop(&mut self, id: u64) -> bool {
        if self.is_current(id) {
            self.running = None;
            self.ended = Some((id, 0));
            true
        } else {
            false
        }
    }

    /// Kill whatever server runs. False when none did.
    pub fn kill(&mut self) -> bool {
        match self.running.take() {
            Some(r) => {
                self.ended = Some((r.id, 137));
                true
            }
            None => false,
        }
    }

    /// Exit status of process `id` once it ended (`None` while it runs, or when its stream
    /// closed first).
    pub fn exit_status(&self, id: u64) -> Option<i32> {
        self.ended.filter(|(e, _)| *e == id).map(|(_, c)| c)
    }

    /// A call of `method` arrived: count it; the fault it meets (a scripted one for its
    /// number first, then the "next call" knobs), consumed.
    pub fn on_call(&mut self, method: &str) -> Option<CallFault> {
        self.calls += 1;
        let n = {
            let c = self.calls_by_method.entry(method.to_string()).or_insert(0);
            *c += 1;
            *c
        };
        let all = self.calls;
        let hit = self.scheduled.iter().position(|f| match &f.method {
            Some(m) => m == method && f.nth == n,
            None => f.nth == all,
        });
        if let Some(i) = hit {
            return Some(self.scheduled.remove(i).fault);
        }
        self.take_fault()
    }

    /// The fault the next call meets, consumed.
    pub fn take_fault(&mut self) -> Option<CallFault> {
        if std::mem::take(&mut self.faults.hang_next) {
            return Some(CallFault::Hang);
        }
        if std::mem::take(&mut self.faults.rpc_error_next) {
            return Some(CallFault::RpcError);
        }
        if std::mem::take(&mut self.faults.truncate_next) {
            return Some(CallFault::Truncate);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_at_a_time_and_a_restart_is_a_new_process() {
        let mut s = U2State::default();
        let a = s.start(9008).expect("first start");
        assert_eq!(s.start(9008), None, "a second UiAutomation is refused");
        assert_eq!(
            s.listening_on(9008),
            None,
            "not listening before start-up ends"
        );
        s.mark_listening(a);
        assert_eq!(s.listening_on(9008), Some(a));
        assert_eq!(s.listening_on(9009), None);
        assert!(s.kill());
        assert!(!s.stop(a));
        let b = s.start(9008).expect("restart");
        assert_ne!(a, b);
        s.mark_listening(a);
        assert_eq!(
            s.listening_on(9008),
            None,
            "a dead process's start-up is ignored"
        );
    }

    #[test]
    fn scheduled_faults_count_calls_per_method_or_in_all() {
        let mut s = U2State::default();
        s.scheduled.push(ScheduledFault {
            method: Some("click".into()),
            nth: 2,
            fault: CallFault::KillAfter,
        });
        s.scheduled.push(ScheduledFault {
            method: None,
            nth: 4,
            fault: CallFault::Hang,
        });
        assert_eq!(s.on_call("click"), None);
        assert_eq!(s.on_call("dumpWindowHierarchy"), None);
        assert_eq!(s.on_call("click"), Some(CallFault::KillAfter));
        assert_eq!(s.on_call("click"), Some(CallFault::Hang), "4th call in all");
        assert_eq!(s.on_call("click"), None, "each fires once");
        assert_eq!(s.calls, 5);
        assert_eq!(s.calls_by_method.get("click"), Some(&4));
    }

    #[test]
    fn each_fault_fires_once() {
        let mut s = U2State::default();
        s.faults.truncate_next = true;
        s.faults.hang_next = true;
        assert_eq!(s.take_fault(), Some(CallFault::Hang));
        assert_eq!(s.take_fault(), Some(CallFault::Truncate));
        assert_eq!(s.take_fault(), None);
    }
}
