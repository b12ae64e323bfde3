//! Where the console listens: [`ConsoleAddr`] (`--console`, `console_addr`) and
//! [`bind`] (the first free default port; a taken port never stops the client).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;

/// The ports tried, in order, when no address is configured.
pub const DEFAULT_PORTS: RangeInclusive<u16> = 9464..=9479;

/// Where the console listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleAddr {
    /// `--no-console` / `console_addr = "off"`.
    Off,
    /// 127.0.0.1, the first free port of [`DEFAULT_PORTS`].
    Default,
    /// Exactly this address (port 0: any free port).
    At(SocketAddr),
}

impl ConsoleAddr {
    /// `off`, `HOST:PORT` with a loopback IP (or `localhost`), or a bare port.
    pub fn parse(s: &str) -> Result<ConsoleAddr, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("none") {
            return Ok(ConsoleAddr::Off);
        }
        let addr = if let Ok(port) = s.parse::<u16>() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        } else if let Some(port) = s.strip_prefix("localhost:") {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("{s:?}: the port is not a number"))?;
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        } else {
            s.parse::<SocketAddr>()
                .map_err(|_| format!("{s:?} is not HOST:PORT (e.g. 127.0.0.1:9464) or off"))?
        };
        if !addr.ip().is_loopback() {
            return Err(format!(
                "{addr}: the console has no password yet (issue 13), so it listens on a loopback address only (127.0.0.1:PORT or [::1]:PORT)"
            ));
        }
        Ok(ConsoleAddr::At(addr))
    }
}

/// Binds the console's listener; `None` (with a warning) when it cannot: a taken port
/// never stops the client.
pub fn bind(addr: ConsoleAddr) -> Option<std::net::TcpListener> {
    let candidates: Vec<SocketAddr> = match addr {
        ConsoleAddr::Off => return None,
        ConsoleAddr::At(a) => vec![a],
        ConsoleAddr::Default => DEFAULT_PORTS
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p))
            .collect(),
    };
    let mut last = None;
    for a in &candidates {
        match std::net::TcpListener::bind(a) {
            Ok(l) => match l.set_nonblocking(true) {
                Ok(()) => return Some(l),
                Err(e) => last = Some((*a, e)),
            },
            Err(e) => last = Some((*a, e)),
        }
    }
    if let Some((a, e)) = last {
        tracing::warn!(addr = %a, tried = candidates.len(), error = %e, "console not started (address taken?); running without /metrics");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert_eq!(ConsoleAddr::parse("off").unwrap(), ConsoleAddr::Off);
        assert_eq!(
            ConsoleAddr::parse("127.0.0.1:9464").unwrap(),
            ConsoleAddr::At("127.0.0.1:9464".parse().unwrap())
        );
        assert_eq!(
            ConsoleAddr::parse("localhost:0").unwrap(),
            ConsoleAddr::At("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(
            ConsoleAddr::parse("9470").unwrap(),
            ConsoleAddr::At("127.0.0.1:9470".parse().unwrap())
        );
        assert!(ConsoleAddr::parse("[::1]:9464").is_ok());
        for bad in [
            "0.0.0.0:9464",
            "192.168.1.5:9464",
            "[::]:1",
            "example.com:1",
            "x",
        ] {
            assert!(ConsoleAddr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_taken_port_is_not_fatal() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        assert!(bind(ConsoleAddr::At(addr)).is_none());
        assert!(bind(ConsoleAddr::Off).is_none());
        assert!(bind(ConsoleAddr::At("127.0.0.1:0".parse().unwrap())).is_some());
    }
}
