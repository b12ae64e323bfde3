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
    /// `off`, `IP:PORT` (or `localhost:PORT`), or a bare port (on 127.0.0.1). An address
    /// other than loopback is accepted here and needs a password
    /// ([`ConsoleAddr::check_password`]).
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
        Ok(ConsoleAddr::At(addr))
    }
}

impl ConsoleAddr {
    /// Whether this address is reachable from other machines (not loopback).
    pub fn is_exposed(&self) -> bool {
        matches!(self, ConsoleAddr::At(a) if !a.ip().is_loopback())
    }

    /// Loopback unless a password is set: `Err` (the reason) for an address other than
    /// loopback without one.
    pub fn check_password(&self, has_password: bool) -> Result<(), String> {
        match self {
            ConsoleAddr::At(a) if self.is_exposed() && !has_password => Err(format!(
                "{a}: the console listens on an address other than loopback only with a password (console_password, CMAUTOBUY_CONSOLE_PASSWORD or run --console-password)"
            )),
            _ => Ok(()),
        }
    }
}

/// The shortest console password accepted.
pub const MIN_PASSWORD_CHARS: usize = 10;

/// A console password shorter than [`MIN_PASSWORD_CHARS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("[{}] 控制台密码至少 {min} 个字符（现为 {chars} 个）/ the console password must be at least {min} characters long (it has {chars}): choose a longer one (console_password, CMAUTOBUY_CONSOLE_PASSWORD, --console-password)", Self::CODE, min = MIN_PASSWORD_CHARS)]
pub struct PasswordTooShort {
    pub chars: usize,
}

impl PasswordTooShort {
    pub const CODE: &'static str = "CONSOLE_PASSWORD_TOO_SHORT";
}

/// Whether `password` is long enough for the console ([`MIN_PASSWORD_CHARS`]
/// characters, not bytes).
pub fn check_password_length(password: &str) -> Result<(), PasswordTooShort> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(PasswordTooShort { chars });
    }
    Ok(())
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
    fn short_passwords_are_refused_by_characters() {
        assert!(check_password_length("123456789").is_err());
        assert!(check_password_length("1234567890").is_ok());
        // Characters, not bytes: nine Chinese characters are 27 bytes.
        let e = check_password_length("控制台密码不够长啊").unwrap_err();
        assert_eq!(e.chars, 9);
        assert!(e.to_string().starts_with("[CONSOLE_PASSWORD_TOO_SHORT]"));
    }

    #[test]
    fn addresses_and_the_password_rule() {
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
        for bad in ["example.com:1", "x", "1.2.3.4"] {
            assert!(ConsoleAddr::parse(bad).is_err(), "{bad}");
        }
        // Loopback needs no password; anything else does.
        for lo in ["127.0.0.1:9464", "[::1]:9464", "9464", "off"] {
            assert!(
                ConsoleAddr::parse(lo)
                    .unwrap()
                    .check_password(false)
                    .is_ok(),
                "{lo}"
            );
        }
        assert!(ConsoleAddr::Default.check_password(false).is_ok());
        for exposed in ["0.0.0.0:9464", "192.168.1.5:9464", "[::]:1"] {
            let a = ConsoleAddr::parse(exposed).unwrap();
            assert!(a.is_exposed());
            assert!(a.check_password(false).is_err(), "{exposed}");
            assert!(a.check_password(true).is_ok(), "{exposed}");
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
